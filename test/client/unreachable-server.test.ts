/**
 * A Sequoia server the client cannot reach is reported as such: the code
 * stays STORE_UNAVAILABLE (callers branch on it), and the message says it is
 * the Sequoia server that is down, not its store (issue 26).
 */
import { describe, expect, it } from 'vitest';
import { createClient, type SequoiaError } from '../../src/client/index.js';
import { freePort } from '../helpers/ports.js';

describe('an unreachable Sequoia server', () => {
  it('is named in the message: the server cannot be reached, its store was not asked', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const client = createClient({ url, timeoutMs: 500, retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 20 } });
    try {
      const e = (await client.next('order').catch((x: unknown) => x)) as SequoiaError;
      expect(e.code).toBe('STORE_UNAVAILABLE');
      expect(e.message).toBe(`the Sequoia server ${url} cannot be reached (ECONNREFUSED); its store was not asked`);
    } finally {
      await client.close();
    }
  });
});
