import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storeError } from '../adapters/kit/store-boundary.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { SequoiaError } from '../core/errors.js';
import { answerText, publicMessage } from './public-message.js';

describe('publicMessage: what a client may read of an error message', () => {
  it.each([
    [
      'STORE_UNAVAILABLE',
      'cannot record the high-water mark of tag "t" in /tmp/x y/state.db (SQLITE_FULL)',
      'cannot record the high-water mark of tag "t" (SQLITE_FULL)',
    ],
    [
      'STORE_UNAVAILABLE',
      'cannot record the high-water mark of tag "t" in /var/lib/sequoia/state.db (SQLITE_FULL)',
      'cannot record the high-water mark of tag "t" (SQLITE_FULL)',
    ],
    [
      'STORE_UNAVAILABLE',
      'cannot record the snowflake tick in ./data/state.db (SQLITE_READONLY)',
      'cannot record the snowflake tick (SQLITE_READONLY)',
    ],
    [
      'STORE_ROLLBACK_DETECTED',
      'tag "a:b": store answered [1, 101) below the high-water mark 201 kept in state dir /srv/seq/data',
      'tag "a:b": store answered [1, 101) below the high-water mark 201 kept in the state directory',
    ],
    [
      'STORE_ROLLBACK_DETECTED',
      'tag "t": a rollback was detected earlier (high-water mark 5 kept in state dir ../data); run `sequoia fence`',
      'tag "t": a rollback was detected earlier (high-water mark 5 kept in the state directory); run `sequoia fence`',
    ],
    [
      'INVALID_ARGUMENT',
      'to must be at least 9 (high-water mark 9 in state dir C:\\seq\\data)',
      'to must be at least 9 (high-water mark 9 in the state directory)',
    ],
    [
      'LEASE_LOST',
      'ZooKeeper is unreachable and /var/lib/seq/zk-id.json holds no worker id',
      'ZooKeeper is unreachable and <path> holds no worker id',
    ],
    [
      'STORE_UNAVAILABLE',
      'postgres at db.internal:5432, database ids: connection refused (ECONNREFUSED)',
      'postgres: connection refused (ECONNREFUSED)',
    ],
    ['STORE_UNAVAILABLE', 'cannot reach Redis at 10.0.0.7:6379 (ETIMEDOUT)', 'cannot reach Redis (ETIMEDOUT)'],
  ])('%s: %s', (code, message, expected) => {
    expect(publicMessage(code, message)).toBe(expected);
  });

  it("keeps what is not a path: ranges, tags, words with slashes, the caller's own route", () => {
    for (const m of ['store answered [1, 101) for tag "x.y:z-1"', 'count must be 1..10000', 'IDs/s and and/or', 'the layout twitter']) {
      expect(publicMessage('STORE_UNAVAILABLE', m)).toBe(m);
    }
    expect(publicMessage('NOT_FOUND', 'no route GET /v1/nothing')).toBe('no route GET /v1/nothing');
    // a route named after its method is a hint to the caller, not a file (TAG_NOT_FOUND names POST /v1/tags)
    const hint = 'tag "x" does not exist (list the tags: sequoia tag list; create it: sequoia tag create x, or POST /v1/tags)';
    expect(publicMessage('TAG_NOT_FOUND', hint)).toBe(hint);
    expect(publicMessage('LEASE_LOST', 'cannot POST /var/lib/x.json')).toBe('cannot POST <path>');
    expect(publicMessage('METHOD_NOT_ALLOWED', 'POST is not allowed on /api/segment/get/:tag; use GET')).toBe(
      'POST is not allowed on /api/segment/get/:tag; use GET',
    );
  });
});

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

  it('what is not a SequoiaError is never told', () => {
    expect(answerText(new Error('at /etc/passwd'), 'internal')).toBe('internal');
  });
});
