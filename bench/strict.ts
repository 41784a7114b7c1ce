/**
 * `npm run bench -- strict` (issue 27): a strict tag over HTTP against the
 * store's own best primitive, side by side in one run, on SQLite, PostgreSQL,
 * MySQL and Redis, all from 50 concurrent clients:
 *
 * - Sequoia: one `sequoia serve` process (`--workers 1`) per store, wrk
 *   -c50 on `GET /api/segment/get/{strict tag}`, and on the same server's
 *   segment (buffered) tag for the p99 baseline at the same load;
 * - the primitive, from this process with 50 connections (one loop per
 *   connection, one statement awaited at a time, as a client would; each
 *   statement timed, so its p99 stands beside the strict route's):
 *   PostgreSQL `nextval()` and a single-row `UPDATE … RETURNING`, MySQL an
 *   AUTO_INCREMENT insert and Flickr's single-row `UPDATE … LAST_INSERT_ID(v
 *   + 1)`, Redis `INCR`, SQLite a single-row `UPDATE … RETURNING` loop (one
 *   connection: SQLite runs one writer at a time, and a synchronous driver
 *   gains nothing from 50 loops in one process), with the store's own pragmas
 *   (WAL, `synchronous = FULL`);
 * - PostgreSQL also through pgbench (`-c 50 -j 2`) when it is installed,
 *   the tool of the issue's first table.
 *
 * wrk runs twice on the strict and segment routes: with two threads,
 * sharing every core with the server (the earlier runs' setting), and with
 * one thread pinned to the last CPU, so that the server's threads (event
 * loop, store, state dir) keep the other cores, as with clients on other
 * machines.
 *
 * Rounds are interleaved (strict, segment, primitives, then again) so that
 * every figure of a store sees the same load; each figure is the median of
 * the rounds. `BENCH_STRICT_BEFORE=path/to/dist/cli/main.js` adds the strict
 * route of another build (e.g. the one before coalescing) to each round.
 * Stores that are not reachable are skipped with a note.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { StateDir } from '../src/adapters/state-dir/state-dir.js';
import { wrk, wrkPinned, type WrkResult } from './http.js';
import { BENCH_MYSQL_URL, BENCH_POSTGRES_URL, BENCH_REDIS_URL } from './stores.js';
import { median, startChild, stopChild } from './util.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

export interface StrictBenchOptions {
  readonly rounds: number;
  /** Seconds per measurement. Default 5. */
  readonly seconds?: number;
  /** Concurrent clients on every side. Default 50. */
  readonly clients?: number;
  /** Default all: sqlite, postgres, mysql, redis. */
  readonly stores?: readonly string[];
}

/** One measurement of a primitive; the latencies where the primitive runs as 50 clients awaiting each operation. */
interface PrimitiveRun {
  readonly opsPerSec: number;
  readonly p50ms?: number;
  readonly p99ms?: number;
}

export interface PrimitiveResult extends PrimitiveRun {
  readonly name: string;
}

export interface StrictBenchRow {
  readonly store: string;
  readonly strict?: WrkResult;
  readonly strictBefore?: WrkResult;
  /** The same strict route with the state dir on tmpfs (its fsync costs nothing): what the durable mark costs. */
  readonly strictTmpfs?: WrkResult;
  readonly segment?: WrkResult;
  /** Strict and segment routes with wrk on one thread pinned to its own CPU, where it can be pinned. */
  readonly pinned?: { readonly strict: WrkResult; readonly segment: WrkResult };
  readonly primitives?: readonly PrimitiveResult[];
  /** The store's sequence primitive, the yardstick (nextval, AUTO_INCREMENT, INCR, the UPDATE loop). */
  readonly sequence?: string;
  readonly note?: string;
}

interface Primitive {
  readonly name: string;
  run(seconds: number): Promise<PrimitiveRun>;
}

interface Kind {
  readonly name: string;
  /** The store URL the server gets, and the primitives on the same store, with a way to drop what they made. */
  /** The first primitive is the store's sequence primitive, the yardstick of the target. */
  setup(dir: string, id: string): Promise<{ url: string; serveArgs: string[]; primitives: Primitive[]; drop: () => Promise<void> }>;
}

/**
 * `clients` loops of `op` for `seconds`: completed operations per second, and
 * each operation's latency as its client saw it (the strict route's p99 is
 * the same kind of figure, one store commit per answer, plus HTTP and the mark).
 */
async function loops(clients: number, seconds: number, op: (c: number) => Promise<unknown>): Promise<PrimitiveRun> {
  const ms: number[] = [];
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let t = performance.now(); t < until;) {
        await op(c);
        const end = performance.now();
        ms.push(end - t);
        t = end;
      }
    }),
  );
  const opsPerSec = ms.length / ((performance.now() - t0) / 1000);
  ms.sort((a, b) => a - b);
  return { opsPerSec, p50ms: ms[Math.floor(ms.length * 0.5)], p99ms: ms[Math.floor(ms.length * 0.99)] };
}

/** pgbench's tps, or NaN when it cannot run (e.g. the server's connection limit, shared with other users). */
function pgbench(url: string, sql: string, clients: number, seconds: number, dir: string): number {
  for (let attempt = 1; ; attempt++) {
    try {
      return pgbenchOnce(url, sql, clients, seconds, dir);
    } catch (e) {
      console.error(`pgbench failed (attempt ${attempt}): ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
      if (attempt === 3) return Number.NaN;
      execFileSync('sleep', ['2']);
    }
  }
}

function pgbenchOnce(url: string, sql: string, clients: number, seconds: number, dir: string): number {
  const file = join(dir, `pgbench-${Math.random().toString(16).slice(2)}.sql`);
  writeFileSync(file, `${sql};\n`);
  const u = new URL(url);
  const out = execFileSync(
    'pgbench',
    [
      '-n',
      '-c',
      String(clients),
      '-j',
      '2',
      '-T',
      String(seconds),
      '-f',
      file,
      '-h',
      u.hostname,
      '-p',
      u.port || '5432',
      '-U',
      decodeURIComponent(u.username || 'postgres'),
      u.pathname.slice(1),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password) } },
  );
  return Number(/tps = ([\d.]+)/.exec(out)?.[1]);
}

const havePgbench = () => spawnSync('pgbench', ['--version']).error === undefined;

function kinds(clients: number): Kind[] {
  return [
    {
      name: 'sqlite',
      async setup(dir) {
        const path = join(dir, 'primitive.db');
        const db = new Database(path);
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        db.exec(
          'CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT OR IGNORE INTO counter VALUES (1, 0)',
        );
        const upd = db.prepare('UPDATE counter SET v = v + 1 WHERE id = 1 RETURNING v');
        return {
          url: `sqlite:${join(dir, 'strict.db')}`,
          serveArgs: [],
          primitives: [
            {
              name: 'single-row UPDATE … RETURNING loop (one connection)',
              run: async (seconds) => {
                let done = 0;
                const t0 = performance.now();
                const until = t0 + seconds * 1000;
                while (performance.now() < until) {
                  upd.get();
                  done++;
                  // let the timer-free loop breathe once in a while, as a server would
                  if ((done & 1023) === 0) await new Promise((r) => setImmediate(r));
                }
                return { opsPerSec: done / ((performance.now() - t0) / 1000) };
              },
            },
          ],
          drop: async () => {
            db.close();
          },
        };
      },
    },
    {
      name: 'postgres',
      async setup(dir, id) {
        const table = `sq_strict_${id}`;
        const admin = new pg.Pool({ connectionString: BENCH_POSTGRES_URL, max: 1, connectionTimeoutMillis: 3000 });
        await admin.query(
          `CREATE SEQUENCE ${table}_seq; CREATE TABLE ${table}_counter (id int PRIMARY KEY, v bigint NOT NULL); INSERT INTO ${table}_counter VALUES (1, 0)`,
        );
        const nextval = `SELECT nextval('${table}_seq')`;
        const update = `UPDATE ${table}_counter SET v = v + 1 WHERE id = 1 RETURNING v`;
        // 50 connections opened for the run and closed after it: PostgreSQL's connection limit is shared with pgbench and the server.
        const fromNode = async (sql: string, seconds: number) => {
          const pool = new pg.Pool({ connectionString: BENCH_POSTGRES_URL, max: clients, connectionTimeoutMillis: 5000 });
          const conns = await Promise.all(Array.from({ length: clients }, () => pool.connect()));
          try {
            return await loops(clients, seconds, (c) => (conns[c] as pg.PoolClient).query(sql));
          } finally {
            for (const c of conns) c.release();
            await pool.end();
          }
        };
        const primitives: Primitive[] = [
          { name: '`nextval()`, node `pg`, 50 connections', run: (s) => fromNode(nextval, s) },
          { name: 'single-row `UPDATE … RETURNING`, node `pg`, 50 connections', run: (s) => fromNode(update, s) },
        ];
        if (havePgbench()) {
          primitives.push(
            {
              name: '`nextval()`, pgbench -c 50 -j 2',
              run: async (s) => ({ opsPerSec: pgbench(BENCH_POSTGRES_URL, nextval, clients, s, dir) }),
            },
            {
              name: 'single-row `UPDATE … RETURNING`, pgbench -c 50 -j 2',
              run: async (s) => ({ opsPerSec: pgbench(BENCH_POSTGRES_URL, update, clients, s, dir) }),
            },
          );
        }
        const u = new URL(BENCH_POSTGRES_URL);
        u.searchParams.set('table', table);
        return {
          url: u.toString(),
          serveArgs: [],
          primitives,
          drop: async () => {
            await admin
              .query(`DROP SEQUENCE IF EXISTS ${table}_seq; DROP TABLE IF EXISTS ${table}_counter; DROP TABLE IF EXISTS ${table}`)
              .catch(() => {});
            await admin.query('DELETE FROM sequoia_schema WHERE component = $1', [table]).catch(() => {});
            await admin.end();
          },
        };
      },
    },
    {
      name: 'mysql',
      async setup(_dir, id) {
        const table = `sq_strict_${id}`;
        const pool = mysql.createPool({ uri: BENCH_MYSQL_URL, connectionLimit: clients, multipleStatements: true });
        await pool.query(
          `CREATE TABLE ${table}_ai (id BIGINT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB; CREATE TABLE ${table}_counter (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB; INSERT INTO ${table}_counter VALUES (1, 0)`,
        );
        const conns = await Promise.all(Array.from({ length: clients }, () => pool.getConnection()));
        const u = new URL(BENCH_MYSQL_URL);
        u.searchParams.set('table', table);
        return {
          url: u.toString(),
          serveArgs: [],
          primitives: [
            {
              name: 'AUTO_INCREMENT insert, `mysql2`, 50 connections',
              run: (s) => loops(clients, s, (c) => (conns[c] as mysql.PoolConnection).query(`INSERT INTO ${table}_ai () VALUES ()`)),
            },
            {
              name: 'single-row `UPDATE … v = LAST_INSERT_ID(v + 1)` (Flickr), 50 connections',
              run: (s) =>
                loops(clients, s, (c) =>
                  (conns[c] as mysql.PoolConnection).query(`UPDATE ${table}_counter SET v = LAST_INSERT_ID(v + 1) WHERE id = 1`),
                ),
            },
          ],
          drop: async () => {
            for (const c of conns) c.release();
            await pool.query(`DROP TABLE IF EXISTS ${table}_ai, ${table}_counter, ${table}`).catch(() => {});
            await pool.query('DELETE FROM sequoia_schema WHERE component = ?', [table]).catch(() => {});
            await pool.end();
          },
        };
      },
    },
    {
      name: 'redis',
      async setup(_dir, id) {
        const ns = `sequoia-bench-strict-${id}`;
        const conns = Array.from({ length: clients }, () => new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: 1 }));
        await Promise.all(conns.map((r) => r.ping()));
        const u = new URL(BENCH_REDIS_URL);
        u.searchParams.set('keyPrefix', `${ns}:tag:`);
        u.searchParams.set('tagsKey', `${ns}:tags`);
        return {
          url: u.toString(),
          // Redis holds no leases: a static worker id (the bench serves no snowflakes).
          serveArgs: ['--worker-id-provider', 'static:1'],
          primitives: [
            { name: '`INCR`, `ioredis`, 50 connections', run: (s) => loops(clients, s, (c) => (conns[c] as Redis).incr(`${ns}:counter`)) },
          ],
          drop: async () => {
            const r = conns[0] as Redis;
            const keys = await r.keys(`${ns}:*`);
            if (keys.length > 0) await r.del(...keys);
            for (const c of conns) c.disconnect();
          },
        };
      },
    },
  ];
}

/**
 * What one durable high-water-mark record costs on this disk (a state-dir
 * update, committed with fsync): each strict batch waits for one, so it bounds
 * a strict tag at about `clients / record time`. Milliseconds: p50, p99.
 */
export async function stateDirRecordMs(records = 200): Promise<{ p50: number; p99: number }> {
  const dir = new StateDir(mkdtempSync(join(tmpdir(), 'sequoia-bench-statedir-')));
  const ms: number[] = [];
  let mark = 1n;
  for (let i = 0; i < records; i++) {
    const t = performance.now();
    // Awaited: the state dir's writes answer promises, and a record is durable only when one resolves.
    await dir.update('bench', () => ({ mark: ++mark }));
    ms.push(performance.now() - t);
  }
  await dir.close();
  ms.sort((a, b) => a - b);
  return { p50: median(ms), p99: ms[Math.floor(records * 0.99)] as number };
}

export async function benchStrict(opts: StrictBenchOptions): Promise<StrictBenchRow[]> {
  const seconds = opts.seconds ?? 5;
  const clients = opts.clients ?? 50;
  const before = process.env.BENCH_STRICT_BEFORE;
  const rows: StrictBenchRow[] = [];
  const shmDirs: string[] = [];
  for (const kind of kinds(clients)) {
    if (opts.stores && !opts.stores.includes(kind.name)) continue;
    const dir = mkdtempSync(join(tmpdir(), `sequoia-bench-strict-${kind.name}-`));
    const id = `${process.pid}_${Math.random().toString(16).slice(2, 8)}`;
    let set: Awaited<ReturnType<Kind['setup']>> | undefined;
    const children: Array<Awaited<ReturnType<typeof startChild>>> = [];
    try {
      set = await kind.setup(dir, id);
      const store = ['--store', set.url];
      execFileSync(process.execPath, [cli, 'tag', 'create', 'strict', '--step', '1', ...store], { stdio: 'pipe' });
      execFileSync(process.execPath, [cli, 'tag', 'create', 'seg', '--step', '100000', ...store], { stdio: 'pipe' });
      const serve = (entry: string, state: string, base = dir) =>
        startChild([
          entry,
          'serve',
          '--port',
          '0',
          '--workers',
          '1',
          ...store,
          '--state-dir',
          join(base, state),
          '--strict-tags',
          'strict',
          '--log-level',
          'info',
          ...set!.serveArgs,
        ]);
      const seq = await serve(cli, 'state');
      children.push(seq);
      const old = before ? await serve(before, 'state-before') : undefined;
      if (old) children.push(old);
      // Not a configuration to run: marks on tmpfs do not survive a reboot. Only the fsync's share of a strict answer.
      const shm = existsSync('/dev/shm') ? mkdtempSync(join('/dev/shm', `sequoia-bench-strict-${kind.name}-`)) : undefined;
      const mem = shm ? await serve(cli, 'state', shm) : undefined;
      if (mem) children.push(mem);
      if (shm) shmDirs.push(shm);
      const res = {
        strict: [] as WrkResult[],
        before: [] as WrkResult[],
        tmpfs: [] as WrkResult[],
        segment: [] as WrkResult[],
        pinnedStrict: [] as WrkResult[],
        pinnedSegment: [] as WrkResult[],
        prim: set.primitives.map(() => [] as PrimitiveRun[]),
      };
      // warm-up
      wrk(`${seq.url}/api/segment/get/strict`, clients, 1);
      wrk(`${seq.url}/api/segment/get/seg`, clients, 1);
      const pinned = wrkPinned(`${seq.url}/api/segment/get/seg`, clients, 1) !== undefined;
      for (let r = 0; r < opts.rounds; r++) {
        // Which build goes first alternates: the first of a pair measured faster in every store, changed or not.
        const pair = [
          () => res.strict.push(wrk(`${seq.url}/api/segment/get/strict`, clients, seconds)),
          () => old && res.before.push(wrk(`${old.url}/api/segment/get/strict`, clients, seconds)),
        ];
        for (const run of r % 2 === 0 ? pair : pair.reverse()) run();
        if (mem) res.tmpfs.push(wrk(`${mem.url}/api/segment/get/strict`, clients, seconds));
        res.segment.push(wrk(`${seq.url}/api/segment/get/seg`, clients, seconds));
        if (pinned) {
          res.pinnedStrict.push(wrkPinned(`${seq.url}/api/segment/get/strict`, clients, seconds) as WrkResult);
          res.pinnedSegment.push(wrkPinned(`${seq.url}/api/segment/get/seg`, clients, seconds) as WrkResult);
        }
        for (const [i, p] of set.primitives.entries()) res.prim[i]?.push(await p.run(seconds));
      }
      const med = (xs: WrkResult[]): WrkResult | undefined =>
        xs.length === 0
          ? undefined
          : { rps: median(xs.map((x) => x.rps)), p50ms: median(xs.map((x) => x.p50ms)), p99ms: median(xs.map((x) => x.p99ms)) };
      rows.push({
        store: kind.name,
        strict: med(res.strict),
        strictBefore: med(res.before),
        strictTmpfs: med(res.tmpfs),
        segment: med(res.segment),
        pinned: pinned ? { strict: med(res.pinnedStrict) as WrkResult, segment: med(res.pinnedSegment) as WrkResult } : undefined,
        primitives: set.primitives.map((p, i) => {
          const runs = res.prim[i] ?? [];
          const of = (f: (r: PrimitiveRun) => number | undefined) => {
            const xs = runs.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x));
            return xs.length === 0 ? undefined : median(xs);
          };
          return { name: p.name, opsPerSec: of((r) => r.opsPerSec) ?? Number.NaN, p50ms: of((r) => r.p50ms), p99ms: of((r) => r.p99ms) };
        }),
        sequence: set.primitives[0]?.name,
      });
    } catch (e) {
      rows.push({ store: kind.name, note: `skipped: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}` });
    } finally {
      for (const c of children) await stopChild(c.child);
      for (const d of shmDirs.splice(0)) rmSync(d, { recursive: true, force: true });
      await set?.drop().catch(() => {});
    }
  }
  return rows;
}
