/**
 * The WorkerLeaseStore contract on every lease store, and the one pool (one
 * handle for SQLite) a backend shares between its segment store and its lease store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import type Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { expect, it } from 'vitest';
import { MemoryWorkerLeaseStore } from '../../src/adapters/memory/memory-worker-lease-store.js';
import { MysqlWorkerLeaseStore } from '../../src/adapters/mysql/mysql-worker-lease-store.js';
import { PostgresWorkerLeaseStore } from '../../src/adapters/postgres/postgres-worker-lease-store.js';
import { RedisWorkerLeaseStore } from '../../src/adapters/redis/redis-worker-lease-store.js';
import { SqliteWorkerLeaseStore } from '../../src/adapters/sqlite/sqlite-worker-lease-store.js';
import { openBackend } from '../../src/app/stores.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, POSTGRES_URL, REDIS_URL, probeMysql, probePostgres, probeRedis, uniqueName } from './backends.js';
import { runWorkerLeaseStoreContract } from './worker-lease-store-contract.js';

runWorkerLeaseStoreContract(
  'memory',
  async () => {
    let ahead = 0;
    const store = new MemoryWorkerLeaseStore(() => Date.now() + ahead);
    // Memory keeps no other writer's rows: its clock moves on instead.
    return { store, cleanup: () => store.close(), backdate: async (_spaces, ms) => void (ahead += ms) };
  },
  { shared: false },
);

runWorkerLeaseStoreContract(
  'sqlite (file, WAL)',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-lease-sqlite-'));
    const path = join(dir, 'sequoia.db');
    const store = new SqliteWorkerLeaseStore(path);
    return {
      store,
      reopen: async () => new SqliteWorkerLeaseStore(path),
      cleanup: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
      backdate: async (spaces, ms) => {
        const db = new SqliteDatabase(path);
        try {
          const stmt = db.prepare('UPDATE sequoia_lease_ledger SET at_ms = at_ms - ? WHERE space = ?');
          for (const s of spaces) stmt.run(ms, s);
        } finally {
          db.close();
        }
      },
    };
  },
  { shared: true },
);

it('sqlite: the segment store and the lease store of one URL share one handle, closed when the last closes', async () => {
  // One handle means one database even for :memory: (two handles would be two empty databases).
  const backend = await openBackend('sqlite::memory:');
  const leases = backend.leases()!;
  await backend.segments.init();
  await leases.init();
  // Both stores' tables in the lease store's handle: one database.
  const db = (leases as unknown as { db: Database.Database }).db;
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map(
    (r) => r.name,
  );
  expect(tables).toEqual(expect.arrayContaining(['sequoia_alloc', 'sequoia_worker_lease']));
  await backend.segments.close();
  expect(db.open).toBe(true);
  expect(await leases.acquire({ space: 's', owner: 'a', ttlMs: 1000, workerCount: 2 })).toMatchObject({ workerId: 0 });
  await leases.close();
  expect(db.open).toBe(false);
  // A store that initialises again opens the file again.
  await backend.segments.init();
  await backend.segments.createTag({ tag: 'again' });
  expect((await backend.segments.allocate('again')).maxId).toBeGreaterThan(0n);
  await backend.segments.close();
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('postgres leases', () => {
  runWorkerLeaseStoreContract(
    'postgres',
    async () => {
      const store = new PostgresWorkerLeaseStore(POSTGRES_URL);
      return {
        store,
        reopen: async () => new PostgresWorkerLeaseStore(POSTGRES_URL),
        cleanup: async (spaces) => {
          await store.close();
          const c = new pg.Client({ connectionString: POSTGRES_URL });
          await c.connect();
          try {
            await c.query('DELETE FROM sequoia_worker_lease WHERE space = ANY($1)', [spaces]);
            await c.query('DELETE FROM sequoia_worker_node WHERE space = ANY($1)', [spaces]);
            await c.query('DELETE FROM sequoia_lease_ledger WHERE space = ANY($1)', [spaces]);
          } finally {
            await c.end();
          }
        },
        backdate: async (spaces, ms) => {
          const c = new pg.Client({ connectionString: POSTGRES_URL });
          await c.connect();
          try {
            await c.query('UPDATE sequoia_lease_ledger SET at_ms = at_ms - $1::bigint WHERE space = ANY($2)', [String(ms), spaces]);
          } finally {
            await c.end();
          }
        },
      };
    },
    { shared: true },
  );

  it('the segment store and the lease store of one URL share one pool, ended when the last closes', async () => {
    const table = uniqueName('sequoia_pool');
    const backend = await openBackend(`${POSTGRES_URL}?table=${table}`);
    const leases = backend.leases()!;
    expect(backend.leases()).toBe(leases);
    const pool = (backend.segments as unknown as { pool: pg.Pool }).pool;
    expect((leases as unknown as { pool: pg.Pool }).pool).toBe(pool);
    await backend.segments.init();
    await leases.init();
    await backend.segments.close();
    expect(pool.ended).toBe(false);
    const space = uniqueName('pool-space');
    expect(await leases.acquire({ space, owner: 'a', ttlMs: 1000, workerCount: 2 })).toMatchObject({ workerId: 0 });
    await leases.close();
    expect(pool.ended).toBe(true);
    const c = new pg.Client({ connectionString: POSTGRES_URL });
    await c.connect();
    await c.query(`DROP TABLE IF EXISTS ${table}`);
    await c.query('DELETE FROM sequoia_schema WHERE component = $1', [table]);
    await c.query('DELETE FROM sequoia_worker_lease WHERE space = $1', [space]);
    await c.end();
  });
});

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('mysql leases', () => {
  runWorkerLeaseStoreContract(
    'mysql',
    async () => {
      const store = new MysqlWorkerLeaseStore(MYSQL_URL);
      return {
        store,
        reopen: async () => new MysqlWorkerLeaseStore(MYSQL_URL),
        cleanup: async (spaces) => {
          await store.close();
          if (spaces.length === 0) return;
          const c = await mysql.createConnection({ uri: MYSQL_URL });
          try {
            await c.query('DELETE FROM sequoia_worker_lease WHERE space IN (?)', [spaces]);
            await c.query('DELETE FROM sequoia_worker_node WHERE space IN (?)', [spaces]);
            await c.query('DELETE FROM sequoia_lease_ledger WHERE space IN (?)', [spaces]);
          } finally {
            await c.end();
          }
        },
        backdate: async (spaces, ms) => {
          const c = await mysql.createConnection({ uri: MYSQL_URL });
          try {
            await c.query('UPDATE sequoia_lease_ledger SET at_ms = at_ms - ? WHERE space IN (?)', [ms, spaces]);
          } finally {
            await c.end();
          }
        },
      };
    },
    { shared: true },
  );

  it('the segment store and the lease store of one URL share one pool, ended when the last closes', async () => {
    const table = uniqueName('sequoia_pool');
    const backend = await openBackend(`${MYSQL_URL}?table=${table}`);
    const leases = backend.leases()!;
    const pool = (backend.segments as unknown as { pool: mysql.Pool }).pool;
    expect((leases as unknown as { connection: { pool: mysql.Pool } }).connection.pool).toBe(pool);
    await backend.segments.init();
    await leases.init();
    await backend.segments.close();
    const space = uniqueName('pool-space');
    expect(await leases.acquire({ space, owner: 'a', ttlMs: 1000, workerCount: 2 })).toMatchObject({ workerId: 0 });
    await leases.close();
    await expect(pool.query('SELECT 1')).rejects.toThrow(/closed/i);
    const c = await mysql.createConnection({ uri: MYSQL_URL });
    await c.query(`DROP TABLE IF EXISTS ${table}`);
    await c.query('DELETE FROM sequoia_schema WHERE component = ?', [table]);
    await c.query('DELETE FROM sequoia_worker_lease WHERE space = ?', [space]);
    await c.end();
  });
});

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('redis leases', () => {
  runWorkerLeaseStoreContract(
    'redis',
    async () => {
      // A prefix per run: the node counter and every space's keys are this run's alone.
      const leasePrefix = `${uniqueName('sequoia-lease-test')}:`;
      const store = new RedisWorkerLeaseStore({ url: REDIS_URL, leasePrefix });
      const direct = async <T>(fn: (r: Redis) => Promise<T>): Promise<T> => {
        const r = new Redis(REDIS_URL);
        try {
          return await fn(r);
        } finally {
          r.disconnect();
        }
      };
      return {
        store,
        reopen: async () => new RedisWorkerLeaseStore({ url: REDIS_URL, leasePrefix }),
        cleanup: async () => {
          await store.close();
          await direct(async (r) => {
            const keys = await r.keys(`${leasePrefix}*`);
            if (keys.length > 0) await r.del(...keys);
          });
        },
        // A stream entry's time is its id: the entries are written again under ids `ms` older.
        backdate: async (spaces, ms) =>
          direct(async (r) => {
            for (const s of spaces) {
              for (const key of await r.keys(`${leasePrefix}ledger:${s}:*`)) {
                const items = await r.xrange(key, '-', '+');
                await r.del(key);
                for (const [id, fields] of items) {
                  const [t, seq] = id.split('-');
                  await r.xadd(key, `${Number(t) - ms}-${seq}`, ...fields);
                }
              }
            }
          }),
      };
    },
    { shared: true },
  );
});
