/**
 * Conflict alarms end to end: a real `sequoia serve` with client tokens; the
 * SDK's reportConflict reaches the counter, the error log line and /v1/status
 * (the tag turns critical); tokens are checked. isUniqueViolation is fed
 * real errors from real PostgreSQL, MariaDB and SQLite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isUniqueViolation } from '../../src/client/index.js';
import { startServe, type ServerProcess } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const ADMIN = 'conflict-admin-token';
const TOKENS = [
  { token: 'orders-client-token', tags: ['orders'], name: 'orders-app' },
  { token: 'other-client-token', tags: ['other'], name: 'other-app' },
];

describe('POST /v1/tags/{tag}/conflicts on a real server', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-conflicts-'));
    server = await startServe(
      ['--store', `sqlite:${join(dir, 's.db')}`, '--state-dir', dir, '--admin-token', ADMIN, '--client-tokens', JSON.stringify(TOKENS)],
      { SEQUOIA_WORKERS: '1' },
    );
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('the SDK reports a conflict: counter, error log line, tag critical in /v1/status; tokens are checked', async () => {
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
    expect((await fetch(`${server.url}/v1/tags`, { method: 'POST', headers: admin, body: '{"tag":"orders","step":100}' })).status).toBe(
      201,
    );
    const client = createClient({ urls: [server.url], token: 'orders-client-token' });
    const id = await client.next('orders');
    const before = await (await fetch(`${server.url}/metrics`, { headers: admin })).text();
    expect(before).not.toMatch(/sequoia_business_conflicts_total\{tag="orders"\}/);

    expect(await client.reportConflict('orders', id, 'orders_pkey: duplicate key')).toEqual({
      tag: 'orders',
      id: String(id),
      conflicts: 1,
    });
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: admin })).text();
    expect(metrics).toMatch(/^sequoia_business_conflicts_total\{tag="orders"\} 1$/m);
    await expect
      .poll(() => server.output(), { timeout: 5000 })
      .toMatch(
        /"level":50[^\n]*"tag":"orders"[^\n]*"id":"\d+"[^\n]*"detail":"orders_pkey: duplicate key"[^\n]*"ledger":\["issued \[\d+, \d+\] \(100 IDs\) by [^"]* pid \d+ [^"]*fence epoch 0[^"]*"\][^\n]*business unique-key conflict/,
      );
    const status = (await (await fetch(`${server.url}/v1/status`, { headers: admin })).json()) as {
      tags: Array<{ tag: string; health: string; healthReason: string; businessConflicts: number }>;
    };
    expect(status.tags.find((t) => t.tag === 'orders')).toMatchObject({ health: 'critical', businessConflicts: 1 });

    // Another tag's token: 403; no token: 401; the admin token: counted.
    const other = createClient({ urls: [server.url], token: 'other-client-token' });
    await expect(other.reportConflict('orders', id)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const none = await fetch(`${server.url}/v1/tags/orders/conflicts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: '1' }),
    });
    expect(none.status).toBe(401);
    const byAdmin = await fetch(`${server.url}/v1/tags/orders/conflicts`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ id: '7' }),
    });
    expect(byAdmin.status).toBe(202);
    const bad = await fetch(`${server.url}/v1/tags/orders/conflicts`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ nope: 1 }),
    });
    expect(bad.status).toBe(400);
    expect(await (await fetch(`${server.url}/metrics`, { headers: admin })).text()).toMatch(
      /^sequoia_business_conflicts_total\{tag="orders"\} 2$/m,
    );
    await client.close();
    await other.close();
  });
});

const describePg = await describeWithService('postgres', async () => {
  const c = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await c.connect();
  await c.end();
});
const describeMy = await describeWithService('mariadb', async () => {
  const c = await mysql.createConnection({ uri: 'mysql://root@127.0.0.1:3306/test' });
  await c.end();
});

describe('isUniqueViolation', () => {
  it('SQLite (better-sqlite3): primary key and unique index', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE, n INTEGER NOT NULL)');
    db.prepare('INSERT INTO t VALUES (1, ?, 0)').run('a');
    const errOf = (f: () => void): unknown => {
      try {
        f();
      } catch (e) {
        return e;
      }
      throw new Error('no error');
    };
    const pk = errOf(() => db.prepare('INSERT INTO t VALUES (1, ?, 0)').run('b'));
    const uk = errOf(() => db.prepare('INSERT INTO t VALUES (2, ?, 0)').run('a'));
    const notNull = errOf(() => db.prepare('INSERT INTO t VALUES (3, ?, NULL)').run('c'));
    expect((pk as { code: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect((uk as { code: string }).code).toBe('SQLITE_CONSTRAINT_UNIQUE');
    expect(isUniqueViolation(pk)).toBe(true);
    expect(isUniqueViolation(uk)).toBe(true);
    expect(isUniqueViolation(notNull)).toBe(false);
    expect(isUniqueViolation(new Error('wrapped', { cause: pk }))).toBe(true);
    expect(isUniqueViolation(undefined)).toBe(false);
    db.close();
  });

  describePg('PostgreSQL (pg)', () => {
    it('23505 is a unique violation; a NOT NULL violation is not', async () => {
      const c = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
      await c.connect();
      try {
        await c.query('CREATE TEMP TABLE t (id bigint PRIMARY KEY, n int NOT NULL)');
        await c.query('INSERT INTO t VALUES (1, 0)');
        const dup = await c.query('INSERT INTO t VALUES (1, 0)').catch((e: unknown) => e);
        const nn = await c.query('INSERT INTO t VALUES (2, NULL)').catch((e: unknown) => e);
        expect((dup as { code: string }).code).toBe('23505');
        expect(isUniqueViolation(dup)).toBe(true);
        expect(isUniqueViolation(nn)).toBe(false);
      } finally {
        await c.end();
      }
    });
  });

  describeMy('MariaDB (mysql2)', () => {
    it('ER_DUP_ENTRY / 1062 is a unique violation; a NOT NULL violation is not', async () => {
      const c = await mysql.createConnection({ uri: 'mysql://root@127.0.0.1:3306/test' });
      try {
        await c.query('CREATE TEMPORARY TABLE t (id BIGINT PRIMARY KEY, n INT NOT NULL)');
        await c.query('INSERT INTO t VALUES (1, 0)');
        const dup = await c.query('INSERT INTO t VALUES (1, 0)').catch((e: unknown) => e);
        const nn = await c.query('INSERT INTO t VALUES (2, NULL)').catch((e: unknown) => e);
        expect(dup).toMatchObject({ code: 'ER_DUP_ENTRY', errno: 1062 });
        expect(isUniqueViolation(dup)).toBe(true);
        expect(isUniqueViolation(nn)).toBe(false);
      } finally {
        await c.end();
      }
    });
  });
});
