/**
 * The SDK's failover over real sockets during a rolling restart: one listed
 * server is down (its port refuses connections) while the others answer 503
 * with Retry-After for a moment (their store busy while the restarted server
 * starts on it). The call must wait for the servers that are up instead of
 * spending its attempts on the one that is not.
 */
import { type Server, createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { Transport } from '../../src/client/transport.js';
import { freePort } from '../helpers/ports.js';

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** A server that answers 503 (Retry-After: 1) to its first `busy` requests, then 200; returns its URL and its answer log. */
async function upServer(busy: number): Promise<{ url: string; answered: number[] }> {
  const answered: number[] = [];
  const srv = createServer((_req, res) => {
    if (answered.length < busy) {
      answered.push(503);
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: { code: 'STORE_UNAVAILABLE', message: 'the store is busy' } }));
      return;
    }
    answered.push(200);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ids: ['1'] }));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const addr = srv.address();
  if (addr === null || typeof addr !== 'object') throw new Error('no port');
  return { url: `http://127.0.0.1:${addr.port}`, answered };
}

/** The URL of a port nothing listens on any more. */
async function downUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

function transport(urls: string[], attempts = 6): Transport {
  return new Transport({
    urls,
    timeoutMs: 2000,
    retry: { attempts, baseDelayMs: 50, maxDelayMs: 2000 },
    fetch: globalThis.fetch,
    signal: new AbortController().signal,
    random: () => 0.5,
  });
}

describe('SDK failover with one server down and the others briefly busy', () => {
  it('the refused server is passed over and the call waits out the busy ones Retry-After', async () => {
    const down = await downUrl();
    const b = await upServer(1);
    const c = await upServer(1);
    const t = transport([down, b.url, c.url]);
    expect(JSON.parse(await t.get('/v1/segment/t?count=1'))).toEqual({ ids: ['1'] });
    expect(b.answered[0]).toBe(503);
    expect(c.answered[0]).toBe(503);
    // The next call goes to a server that is up, not back to the refused one.
    expect(JSON.parse(await t.get('/v1/segment/t?count=1'))).toEqual({ ids: ['1'] });
    expect(b.answered.length + c.answered.length).toBe(4);
  });

  it('every listed server down: the attempts still bound the call, and the error names a server', async () => {
    const t = transport([await downUrl(), await downUrl()], 3);
    const started = performance.now();
    await expect(t.get('/x')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: expect.stringContaining('ECONNREFUSED') });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('one URL (a balancer or --workers N) that refuses: each try is an attempt, as before', async () => {
    const down = await downUrl();
    let tries = 0;
    const counting: typeof fetch = async (input, init) => {
      tries++;
      return globalThis.fetch(input, init);
    };
    const t = new Transport({
      urls: [down],
      timeoutMs: 2000,
      retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 },
      fetch: counting,
      signal: new AbortController().signal,
      random: () => 0.5,
    });
    await expect(t.get('/x')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(tries).toBe(3);
  });
});
