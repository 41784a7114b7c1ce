import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storeError } from '../adapters/kit/connection/store-boundary.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { SequoiaError } from '../core/errors.js';
import { answerText } from './public-message.js';

describe('errors made with their where apart (core/errors.ts located)', () => {
  it('the store: the operator reads host and database, a client what failed', () => {
    const e = storeError('postgres', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), 'db.internal:5432, database ids');
    const why = 'connection refused: nothing listens there (is the server running? check host and port in the store URL) (ECONNREFUSED)';
    expect(e.message).toBe(`postgres at db.internal:5432, database ids: ${why}`);
    expect(e.publicMessage).toBe(`postgres: ${why}`);
    expect(e.operatorDetail).toBe('db.internal:5432, database ids');
    expect(e.publicMessage).not.toMatch(/db\.internal|5432|ids/);
    expect(answerText(e, '')).toBe(e.publicMessage);
  });

  it('the state dir: the path is in the message and the detail, never in the answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-located-'));
    const blocked = join(dir, 'file');
    writeFileSync(blocked, '');
    let err: unknown;
    try {
      new StateDir(join(blocked, 'state'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SequoiaError);
    const e = err as SequoiaError;
    expect(e.message).toContain(blocked);
    expect(e.operatorDetail).toBe(join(blocked, 'state'));
    expect(e.publicMessage).toMatch(/^cannot open the state directory \([A-Z]+\)$/);
    expect(answerText(e, '')).not.toContain(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('an error made without a where is answered as written; what is not a SequoiaError is never told', () => {
    expect(answerText(new SequoiaError('NOT_FOUND', 'no route GET /v1/nothing'), '')).toBe('no route GET /v1/nothing');
    expect(answerText(new Error('at /etc/passwd'), 'internal')).toBe('internal');
  });
});
