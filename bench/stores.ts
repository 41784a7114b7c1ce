/**
 * What each store sustains: segment allocations per second from 8 concurrent
 * allocators on one tag (one row: this bounds how small a step may be for a
 * given cluster-wide ID rate), and strict-mode IDs per second (one store
 * operation plus one high-water-mark fsync batch per ID) through IdService.
 * Stores that are not reachable are skipped with a note.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MemorySegmentStore } from '../src/adapters/memory/memory-segment-store.js';
import { MysqlSegmentStore } from '../src/adapters/mysql/mysql-segment-store.js';
import { PostgresSegmentStore } from '../src/adapters/postgres/postgres-segment-store.js';
import { RedisSegmentStore } from '../src/adapters/redis/redis-segment-store.js';
import { SqliteSegmentStore } from '../src/adapters/sqlite/sqlite-segment-store.js';
import { StateDir } from '../src/adapters/state-dir/state-dir.js';
import type { SegmentStore } from '../src/ports/segment-store.js';
import { IdService } from '../src/service/id-service.js';

export const BENCH_POSTGRES_URL = process.env.SEQUOIA_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const BENCH_MYSQL_URL = process.env.SEQUOIA_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const BENCH_REDIS_URL = process.env.SEQUOIA_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface StoreBenchOptions {
  /** Seconds per measurement. Default 3. */
  readonly seconds?: number;
  /** Concurrent allocators (promises in one process). Default 8. */
  readonly concurrency?: number;
  /** Stores to run; default all: memory, sqlite, postgres, mysql, redis. */
  readonly stores?: readonly string[];
}

export interface StoreBenchRow {
  readonly store: string;
  /** Segment allocations (atomic max_id += step) per second. */
  readonly allocsPerSec?: number;
  /** Strict-mode IDs per second (IdService, one store operation per ID). */
  readonly strictIdsPerSec?: number;
  /** Why the store was skipped, if it was. */
  readonly note?: string;
}

interface Target {
  readonly name: string;
  /** A store private to this run, and how to drop what it created. */
  open(): Promise<{ store: SegmentStore; drop: () => Promise<void> }>;
}

const suffix = () => `${process.pid}_${Math.random().toString(16).slice(2, 8)}`;

export const STORE_TARGETS: readonly Target[] = [
  {
    name: 'memory',
    open: async () => ({ store: new MemorySegmentStore(), drop: async () => {} }),
  },
  {
    name: 'sqlite',
    open: async () => ({
      store: new SqliteSegmentStore({ path: join(mkdtempSync(join(tmpdir(), 'sequoia-bench-store-')), 'ids.db') }),
      drop: async () => {},
    }),
  },
  {
    name: 'postgres',
    open: async () => {
      const table = `sq_bench_${suffix()}`;
      return {
        store: new PostgresSegmentStore({ connectionString: BENCH_POSTGRES_URL, table, connectTimeoutMs: 2000 }),
        drop: async () => {
          const c = new pg.Client({ connectionString: BENCH_POSTGRES_URL });
          await c.connect();
          await c.query(`DROP TABLE IF EXISTS ${table}`);
          await c.query('DELETE FROM sequoia_schema WHERE component = $1', [table]);
          await c.end();
        },
      };
    },
  },
  {
    name: 'mysql',
    open: async () => {
      const table = `sq_bench_${suffix()}`;
      return {
        store: new MysqlSegmentStore({ uri: BENCH_MYSQL_URL, table, connectTimeoutMs: 2000 }),
        drop: async () => {
          const c = await mysql.createConnection({ uri: BENCH_MYSQL_URL });
          await c.query(`DROP TABLE IF EXISTS ${table}`);
          await c.query('DELETE FROM sequoia_schema WHERE component = ?', [table]);
          await c.end();
        },
      };
    },
  },
  {
    name: 'redis',
    open: async () => {
      const ns = `sequoia-bench-${suffix()}`;
      return {
        store: new RedisSegmentStore({ url: BENCH_REDIS_URL, keyPrefix: `${ns}:tag:`, tagsKey: `${ns}:tags` }),
        drop: async () => {
          const r = new Redis(BENCH_REDIS_URL);
          const keys = await r.keys(`${ns}:*`);
          if (keys.length > 0) await r.del(...keys);
          r.disconnect();
        },
      };
    },
  },
];

/** Runs `concurrency` loops of `op` for `seconds`; answers completed ops per second. */
async function rate(op: () => Promise<unknown>, concurrency: number, seconds: number): Promise<number> {
  let done = 0;
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await op();
        done++;
      }
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}

export async function benchStores(opts: StoreBenchOptions = {}): Promise<StoreBenchRow[]> {
  const seconds = opts.seconds ?? 3;
  const concurrency = opts.concurrency ?? 8;
  const rows: StoreBenchRow[] = [];
  for (const target of STORE_TARGETS) {
    if (opts.stores && !opts.stores.includes(target.name)) continue;
    let opened: Awaited<ReturnType<Target['open']>> | undefined;
    try {
      opened = await target.open();
      const { store } = opened;
      await store.init();
      await store.createTag({ tag: 'alloc', step: 1 });
      await store.createTag({ tag: 'strict', step: 1 });
      await rate(() => store.allocate('alloc'), concurrency, Math.min(1, seconds / 3)); // warm-up
      const allocsPerSec = await rate(() => store.allocate('alloc'), concurrency, seconds);
      const service = new IdService({
        store,
        marks: new StateDir(mkdtempSync(join(tmpdir(), 'sequoia-bench-marks-'))),
        refreshIntervalMs: 0,
        strictTags: ['strict'],
        giveBackOnClose: false,
      });
      await service.start();
      const strict = await service.allocator('strict');
      const strictIdsPerSec = await rate(async () => strict.next(), concurrency, seconds);
      rows.push({ store: target.name, allocsPerSec, strictIdsPerSec });
    } catch (e) {
      rows.push({ store: target.name, note: `skipped: ${e instanceof Error ? e.message : String(e)}` });
    } finally {
      if (opened) {
        await opened.drop().catch(() => {});
        await opened.store.close().catch(() => {});
      }
    }
  }
  return rows;
}
