/**
 * The worker-id lease ledger end to end, with real processes on SQLite,
 * PostgreSQL, MySQL and Redis: a `gen snowflake` run (grant, renewals, release), a
 * server SIGKILLed while holding the id, and a run that takes the id over
 * after the dead holder's lease ran out. Every ID they returned is audited
 * clean and traced by `explain --store` to the process that made it; IDs
 * planted with a worker id nobody held at their tick are found by audit.
 * Each run uses a layout with an epoch of its own, so its id space (and its
 * ledger rows) meets no other test's on the shared databases.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose, decompose, defineLayouts, joinWorker } from '../../src/core/snowflake/layout.js';
import { MemoryWorkerLeaseStore } from '../../src/adapters/memory/memory-worker-lease-store.js';
import { leaseHeldFrom } from '../../src/app/audit.js';
import { sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { type Lease, ok } from '../helpers/lease-explain.js';
import { Redis } from 'ioredis';
import { RedisWorkerLeaseStore } from '../../src/adapters/redis/redis-worker-lease-store.js';
import { MYSQL_URL, POSTGRES_URL, REDIS_URL, probeMysql, probePostgres, probeRedis } from '../contract/backends.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-lease-ledger-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function scenario(
  name: string,
  store: string,
  spaceRows: (space: string, workerId: number) => Promise<Array<{ kind: string; generation: number }>>,
): Promise<void> {
  const layoutName = `ll${randomInt(1e9)}`;
  const spec = {
    epochMs: Date.UTC(2024, 0, 1) + randomInt(1_000_000_000),
    timeBits: 41,
    fields: [
      { name: 'worker', bits: 10, role: 'node' },
      { name: 'sequence', bits: 12, role: 'sequence' },
    ],
  };
  const layout = defineLayouts({ [layoutName]: spec }).get(layoutName)!;
  const config = join(dir, `${name}-config.json`);
  writeFileSync(config, JSON.stringify({ layouts: { [layoutName]: spec } }));
  const common = ['--layout', layoutName, '--config', config, '--store', store];
  const gen = (stateDir: string): string[] =>
    ok(sequoia(['gen', 'snowflake', '--count', '30', ...common], { SEQUOIA_STATE_DIR: stateDir }))
      .trim()
      .split('\n');
  const explain = (id: string): Lease => (JSON.parse(ok(sequoia(['explain', id, ...common]))) as { lease: Lease }).lease;
  const workerOf = (id: string): number => joinWorker(layout, decompose(layout, BigInt(id)).values);

  // 1. A command takes a worker id, renews it, gives it back.
  const first = gen(join(dir, `${name}-state-1`));
  const w = workerOf(first[0] as string);

  // 2. A server takes the id given back, issues, and is killed holding it.
  const server = await startServe([
    '--config',
    config,
    '--store',
    store,
    '--state-dir',
    join(dir, `${name}-state-2`),
    '--worker-lease-ttl-ms',
    '1000',
    '--workers',
    '1',
  ]);
  let killed: string[];
  try {
    const r = await fetch(`${server.url}/v1/snowflake?count=30&layout=${layoutName}`);
    expect(r.status, server.output()).toBe(200);
    killed = ((await r.json()) as { ids: string[] }).ids;
    expect(killed.map(workerOf)).toEqual(killed.map(() => w));
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
  }

  // 3. After its lease runs out, the next run takes the dead holder's id over.
  const start = Date.now();
  let third: string[] = [];
  while (Date.now() - start < 20_000) {
    third = gen(join(dir, `${name}-state-3`));
    if (workerOf(third[0] as string) === w) break;
  }
  expect(third.map(workerOf)).toContain(w);

  // One worker id's rows: the runs that waited for the takeover may have taken (and given back) another id more than once.
  const rows = await spaceRows(layout.spaceKey, w);
  const kinds = rows.map((r) => `${r.kind}:${r.generation}`);
  expect(kinds[0]).toBe('grant:1');
  expect(kinds).toContain('release:1');
  expect(kinds).toContain('grant:2');
  expect(kinds).not.toContain('release:2');
  expect(kinds.filter((k) => k.startsWith('renew:2')).length).toBeGreaterThan(0);
  expect(kinds.some((k) => /^takeover:[3-9]/.test(k))).toBe(true);

  // Every ID is traced to the process that made it: the server's to the killed server's pid.
  const serverLease = explain(killed[10] as string);
  expect(serverLease.workerId).toBe(w);
  expect(serverLease.heldBy.map((h) => h.pid)).toContain(server.child.pid);
  expect(serverLease.heldBy.find((h) => h.pid === server.child.pid)).toMatchObject({
    generation: 2,
    began: 'grant',
    released: false,
    version: expect.stringMatching(/^\d+\.\d+\.\d+/),
  });
  expect(explain(first[0] as string).heldBy[0]).toMatchObject({ generation: 1, released: true });

  // The IDs they returned: clean (no ID from an unheld worker id).
  const file = join(dir, `${name}-ids.txt`);
  const all = [...first, ...killed, ...third];
  writeFileSync(file, all.join('\n') + '\n');
  const clean = sequoia(['audit', file, ...common, '--json']);
  expect(clean.status, clean.stdout + clean.stderr).toBe(0);
  expect((JSON.parse(clean.stdout) as { notChecked: string[] }).notChecked).toEqual([]);

  // Planted: the same worker id an hour before anyone held it, and a worker id nobody ever held, now.
  const tickNow = Math.floor((Date.now() - layout.epochMs) / layout.unitMs);
  const before = compose(layout, tickNow - 3_600_000, { worker: w, sequence: 5 }).toString();
  const stranger = compose(layout, tickNow - 1000, { worker: 1000, sequence: 0 }).toString();
  writeFileSync(file, [...all, before, stranger].join('\n') + '\n');
  const found = sequoia(['audit', file, ...common, '--json']);
  expect(found.status, found.stdout + found.stderr).toBe(1);
  const report = JSON.parse(found.stdout) as { findings: Array<{ kind: string; count: number; examples: string[] }> };
  expect(report.findings.map((f) => [f.kind, f.count])).toEqual([['unheld-worker-id', 2]]);
  expect(report.findings[0]!.examples.map((e) => e.split(' ')[0]).sort()).toEqual([before, stranger].sort());
  const text = sequoia(['audit', file, ...common]);
  expect(text.stdout).toMatch(/FINDING unheld-worker-id: 2 IDs carry a worker id that nobody held at their tick/);
  expect(explain(stranger)).toMatchObject({
    workerId: 1000,
    heldBy: [],
    message: expect.stringMatching(/^nobody held worker id 1000 at tick/),
  });
  expect(explain(before).heldBy).toEqual([]);
}

describe('AuditLedger.leaseHeld from the lease ledger', () => {
  it('answers from the holdings of the space: held inside a holding, not before, after, or for another id', async () => {
    const store = new MemoryWorkerLeaseStore();
    const a = await store.acquire({ space: 's1', owner: 'h/1/i', ttlMs: 10_000, workerCount: 4, nowTick: 100 });
    if ('refused' in a) throw new Error(a.refused);
    await store.renew({ space: 's1', workerId: a.workerId, owner: 'h/1/i', generation: a.generation }, 10_000, 200);
    const held = leaseHeldFrom(store);
    expect(await held('s1', a.workerId, 150)).toBe(true);
    expect(await held('s1', a.workerId, 99)).toBe(false);
    expect(await held('s1', a.workerId, 201)).toBe(false);
    expect(await held('s1', a.workerId + 1, 150)).toBe(false);
    expect(await held('s2', a.workerId, 150)).toBe(false);
  });
});

describe('lease ledger: sqlite', () => {
  it('records grant, renewals, release and takeover; explain names the holder; audit finds IDs from unheld worker ids', async () => {
    const path = join(dir, 'ledger.db');
    await scenario('sqlite', `sqlite:${path}`, async (space, workerId) => {
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(path, { readonly: true });
      try {
        return db
          .prepare('SELECT kind, generation FROM sequoia_lease_ledger WHERE space = ? AND worker_id = ? ORDER BY seq')
          .all(space, workerId) as Array<{
          kind: string;
          generation: number;
        }>;
      } finally {
        db.close();
      }
    });
  }, 300_000);
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('lease ledger: postgres', () => {
  it('records grant, renewals, release and takeover; explain names the holder; audit finds IDs from unheld worker ids', async () => {
    const c = new pg.Client({ connectionString: POSTGRES_URL });
    await c.connect();
    let space = '';
    try {
      await scenario('postgres', POSTGRES_URL, async (s, workerId) => {
        space = s;
        const r = await c.query(
          'SELECT kind, generation::int AS generation FROM sequoia_lease_ledger WHERE space = $1 AND worker_id = $2 ORDER BY seq',
          [s, workerId],
        );
        return r.rows as Array<{ kind: string; generation: number }>;
      });
    } finally {
      await c.query('DELETE FROM sequoia_lease_ledger WHERE space = $1', [space]);
      await c.query('DELETE FROM sequoia_worker_lease WHERE space = $1', [space]);
      await c.end();
    }
  }, 300_000);
});

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('lease ledger: mysql', () => {
  it('records grant, renewals, release and takeover; explain names the holder; audit finds IDs from unheld worker ids', async () => {
    const c = await mysql.createConnection({ uri: MYSQL_URL });
    let space = '';
    try {
      await scenario('mysql', MYSQL_URL, async (s, workerId) => {
        space = s;
        const [rows] = await c.query('SELECT kind, generation FROM sequoia_lease_ledger WHERE space = ? AND worker_id = ? ORDER BY seq', [
          s,
          workerId,
        ]);
        return (rows as Array<{ kind: string; generation: number | string }>).map((r) => ({
          kind: r.kind,
          generation: Number(r.generation),
        }));
      });
    } finally {
      await c.query('DELETE FROM sequoia_lease_ledger WHERE space = ?', [space]);
      await c.query('DELETE FROM sequoia_worker_lease WHERE space = ?', [space]);
      await c.end();
    }
  }, 300_000);
});

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('lease ledger: redis', () => {
  it('records grant, renewals, release and takeover; explain names the holder; audit finds IDs from unheld worker ids', async () => {
    const leasePrefix = `sequoia-ll-${process.pid}-${randomInt(1e9)}:`;
    const store = new RedisWorkerLeaseStore({ url: REDIS_URL, leasePrefix });
    await store.init();
    try {
      await scenario('redis', `${REDIS_URL}?leasePrefix=${leasePrefix}`, async (s, workerId) =>
        (await store.entries(s, workerId)).map((e) => ({ kind: e.kind, generation: e.generation })),
      );
    } finally {
      await store.close();
      const r = new Redis(REDIS_URL);
      const keys = await r.keys(`${leasePrefix}*`);
      if (keys.length > 0) await r.del(...keys);
      r.disconnect();
    }
  }, 300_000);
});
