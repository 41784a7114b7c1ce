/**
 * Test harnesses for every store. The server-backed ones use their own table
 * or key prefix per run (pid + random), since other test files use the same
 * servers at the same time, and drop it afterwards. Servers come from the environment:
 * SEQUOIA_TEST_POSTGRES_URL, SEQUOIA_TEST_MYSQL_URL, SEQUOIA_TEST_REDIS_URL.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import { MysqlSegmentStore } from '../../src/adapters/mysql/mysql-segment-store.js';
import { PostgresSegmentStore } from '../../src/adapters/postgres/postgres-segment-store.js';
import { RedisSegmentStore } from '../../src/adapters/redis/redis-segment-store.js';
import { SqliteSegmentStore } from '../../src/adapters/sqlite/sqlite-segment-store.js';
import type { ContractHarness } from './segment-store-contract.js';

export const POSTGRES_URL = process.env.SEQUOIA_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const MYSQL_URL = process.env.SEQUOIA_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const REDIS_URL = process.env.SEQUOIA_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function uniqueName(base: string): string {
  return `${base}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

export async function probePostgres(): Promise<void> {
  const c = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
  } finally {
    await c.end().catch(() => {});
  }
}

export async function probeMysql(): Promise<void> {
  const c = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 2000 });
  try {
    await c.query('SELECT 1');
  } finally {
    await c.end().catch(() => {});
  }
}

export async function probeRedis(): Promise<void> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
  } finally {
    r.disconnect();
  }
}

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

export function memoryHarness(): ContractHarness {
  const store = new MemorySegmentStore();
  return {
    store,
    snapshot: async (tag) => (await store.getTag(tag))?.maxId,
    restore: async (tag, snap) => store.restore(tag, snap as bigint),
    cleanup: () => store.close(),
  };
}

/** A SQLite file `<dir>/<name>.db`; snapshots and restores go through a handle of their own, as a backup tool's would. */
export function sqliteHarness(dir: string, name: string): ContractHarness {
  const path = join(dir, `${name}.db`);
  const store = new SqliteSegmentStore({ path });
  const direct = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(path, { timeout: 5000 });
    db.defaultSafeIntegers(true);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    store,
    url: `sqlite:${path}`,
    snapshot: async (tag) =>
      direct((db) => (db.prepare('SELECT max_id FROM sequoia_alloc WHERE tag = ?').get(tag) as { max_id: bigint }).max_id),
    restore: async (tag, snap) => {
      direct((db) => db.prepare('UPDATE sequoia_alloc SET max_id = ? WHERE tag = ?').run(snap as bigint, tag));
    },
    reopen: async () => new SqliteSegmentStore({ path }),
    cleanup: () => store.close(),
  };
}

export async function postgresHarness(): Promise<ContractHarness> {
  const table = uniqueName('sq_test');
  // The store's sessions carry a name of their own, so the server can be made to drop exactly them.
  const app = uniqueName('sq_app');
  const store = new PostgresSegmentStore({ connectionString: withParams(POSTGRES_URL, { application_name: app }), table });
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  admin.on('error', () => {});
  return {
    store,
    dropConnections: async () =>
      (await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app])).rowCount ?? 0,
    unreachable: () => new PostgresSegmentStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectTimeoutMs: 1000 }),
    withName: (name) => new PostgresSegmentStore({ connectionString: POSTGRES_URL, table: name }),
    url: withParams(POSTGRES_URL, { table }),
    snapshot: async (tag) => (await admin.query(`SELECT max_id::text AS m FROM ${table} WHERE tag = $1`, [tag])).rows[0]?.m as string,
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${table} SET max_id = $2::bigint WHERE tag = $1`, [tag, snap as string]);
    },
    reopen: async () => new PostgresSegmentStore({ connectionString: POSTGRES_URL, table }),
    cleanup: async () => {
      await store.close();
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
      await admin.query(`DROP TABLE IF EXISTS ${table}_ledger`);
      await admin.query('DELETE FROM sequoia_schema WHERE component = $1', [table]).catch(() => {});
      await admin.end();
    },
  };
}

export async function mysqlHarness(): Promise<ContractHarness> {
  // A database of its own: the server can then be made to drop exactly this store's connections.
  const database = uniqueName('sq_db');
  const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 2, supportBigNumbers: true, bigNumberStrings: true });
  await admin.query(`CREATE DATABASE ${database}`);
  const uri = new URL(MYSQL_URL);
  uri.pathname = `/${database}`;
  const table = `${database}.sq_test`;
  const store = new MysqlSegmentStore({ uri: uri.toString(), table: 'sq_test' });
  return {
    store,
    url: withParams(uri.toString(), { table: 'sq_test' }),
    dropConnections: async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SELECT id FROM information_schema.PROCESSLIST WHERE db = ?', [database]);
      for (const r of rows) await admin.query(`KILL ${Number(r.id)}`).catch(() => {});
      return rows.length;
    },
    unreachable: () => new MysqlSegmentStore({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeoutMs: 1000 }),
    withName: (name) => new MysqlSegmentStore({ uri: MYSQL_URL, table: name }),
    snapshot: async (tag) => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT max_id FROM ${table} WHERE tag = ?`, [tag]);
      return rows[0]?.max_id as string;
    },
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${table} SET max_id = CAST(? AS SIGNED) WHERE tag = ?`, [snap as string, tag]);
    },
    reopen: async () => new MysqlSegmentStore({ uri: uri.toString(), table: 'sq_test' }),
    cleanup: async () => {
      await store.close();
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    },
  };
}

export async function redisHarness(): Promise<ContractHarness> {
  const ns = uniqueName('sequoia-test');
  const keyPrefix = `${ns}:tag:`;
  const tagsKey = `${ns}:tags`;
  const ledgerPrefix = `${ns}:ledger:`;
  const store = new RedisSegmentStore({ url: REDIS_URL, keyPrefix, tagsKey, ledgerPrefix, clientName: ns });
  const admin = new Redis(REDIS_URL);
  admin.on('error', () => {});
  return {
    store,
    dropConnections: async () => {
      const list = (await admin.client('LIST')) as string;
      const ids = list
        .split('\n')
        .filter((l) => l.includes(` name=${ns} `))
        .map((l) => /\bid=(\d+)/.exec(l)?.[1]);
      for (const id of ids) if (id !== undefined) await admin.client('KILL', 'ID', id);
      return ids.length;
    },
    unreachable: () => new RedisSegmentStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 500 }),
    url: withParams(REDIS_URL, { keyPrefix, tagsKey, ledgerPrefix }),
    snapshot: async (tag) => admin.hget(keyPrefix + tag, 'max_id'),
    restore: async (tag, snap) => {
      await admin.hset(keyPrefix + tag, 'max_id', snap as string);
    },
    reopen: async () => new RedisSegmentStore({ url: REDIS_URL, keyPrefix, tagsKey, ledgerPrefix }),
    cleanup: async () => {
      await store.close();
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${ns}:*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await admin.del(...keys);
      } while (cursor !== '0');
      admin.disconnect();
    },
  };
}
