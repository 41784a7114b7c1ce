/**
 * Issue 40 item 1: a forgotten old server after `sequoia migrate`. On real
 * PostgreSQL and MariaDB, a Leaf and a Tinyid table are migrated into a
 * SQLite store with the default margin (1,000,000) by the real CLI; the new
 * store hands out IDs (`gen segment`, a real process); an old server nobody
 * stopped then runs its own allocation SQL (Leaf's DAO: `UPDATE … SET max_id
 * = max_id + 1000000` then SELECT, MAX_STEP; Tinyid's read and optimistic
 * version update, its row's step 1,000,000) for its next two loads. Before
 * the fix both loads succeeded and the second covered every ID the new store
 * had handed out; now migrate retires the row (renamed TAG#sequoia-retired)
 * and both loads fail (no row), with 0 IDs in common. With --keep-source the
 * row stays (the documented opt-out): the old server keeps loading, and
 * migrate run again raises the copy above it. A row that moves while migrate
 * runs (an old server's load committed between migrate's read and its
 * retirement) is read again under the row's lock, and the copy starts above it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { expect, it } from 'vitest';
import { uniqueName } from '../contract/backends.js';
import { BIN, cleanEnv, sequoia } from '../helpers/cli.js';
import { mysqlLeafDao, postgresLeafDao } from '../helpers/leaf-standin.js';
import { LEAF, type PeerSchema, peerStoreUrl, TINYID } from '../helpers/peer-schemas.js';
import { describeWithService } from '../helpers/services.js';
import { SQL_DATABASES, type SqlDatabase } from '../helpers/sql-databases.js';
import { mysqlTinyidService, postgresTinyidService, segmentIds } from '../helpers/tinyid-standin.js';

/** Leaf's SegmentIDGenImpl.MAX_STEP, and the Tinyid row's step here. */
const MAX_STEP = 1_000_000;
const TAG = 'orders';

/** An old server of the peer, as its own code loads a segment of TAG: the half-open range it would hand out. */
interface OldServer {
  /** A load with the maximum step. Throws as the peer's code would when the row is gone. */
  load(): Promise<[bigint, bigint]>;
  close(): Promise<void>;
}

function oldServer(db: SqlDatabase, peer: PeerSchema, table: string): OldServer {
  if (peer.name === 'leaf') {
    const dao = db.name === 'postgres' ? postgresLeafDao(db.url, table) : mysqlLeafDao(db.url, table);
    return {
      load: async () => {
        const a = await dao.updateMaxIdByCustomStepAndGetLeafAlloc(TAG, MAX_STEP);
        return [a.maxId - BigInt(MAX_STEP), a.maxId];
      },
      close: () => dao.close(),
    };
  }
  const service = db.name === 'postgres' ? postgresTinyidService(db.url, table) : mysqlTinyidService(db.url, table);
  return {
    load: async () => {
      const ids = segmentIds(await service.getNextSegmentId(TAG));
      return [ids[0] as bigint, (ids[ids.length - 1] as bigint) + 1n];
    },
    close: () => service.close(),
  };
}

function genSegment(store: string, stateDir: string, count: number): bigint[] {
  const r = sequoia(['gen', 'segment', '--tag', TAG, '--count', String(count), '--store', store, '--state-dir', stateDir]);
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split('\n').map(BigInt);
}

function overlapping(ids: readonly bigint[], ranges: ReadonlyArray<[bigint, bigint]>): number {
  return ids.filter((id) => ranges.some(([a, b]) => id >= a && id < b)).length;
}

function tagOf(store: string): { maxId: string; fenceEpoch: number } | undefined {
  const r = sequoia(['tag', 'list', '--json', '--store', store]);
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as Array<{ tag: string; maxId: string; fenceEpoch: number }>).find((t) => t.tag === TAG);
}

function rowSql(peer: PeerSchema, table: string): string {
  return peer.name === 'leaf'
    ? LEAF.insertRow(table, { tag: TAG, maxId: 1000n, step: 1000 })
    : TINYID.insertRow(table, { tag: TAG, maxId: 1000n, step: MAX_STEP });
}

interface Scratch {
  readonly table: string;
  /** The peer table as `migrate --from` names it. */
  readonly from: string;
  /** A fresh directory, and the SQLite store in it that migrate copies into. */
  readonly base: string;
  readonly store: string;
}

async function withTables(db: SqlDatabase, peer: PeerSchema, fn: (s: Scratch) => Promise<void>): Promise<void> {
  const table = uniqueName(`t_${peer.table}`);
  const side = uniqueName('sq_side');
  await db.exec(peer.ddl(db.name, table, { binary: true }));
  try {
    await db.exec(rowSql(peer, table));
    const base = tmp();
    await fn({ table, from: peerStoreUrl(db.url, peer, { table, side }), base, store: `sqlite:${join(base, 'ids.db')}` });
  } finally {
    await db.exec(`DROP TABLE IF EXISTS ${table}`);
    await db.exec(`DROP TABLE IF EXISTS ${side}`);
  }
}

/** The tables, and an old server of the peer on them, closed after `fn`. */
function withOldServer(db: SqlDatabase, peer: PeerSchema, fn: (s: Scratch & { old: OldServer }) => Promise<void>): Promise<void> {
  return withTables(db, peer, async (s) => {
    const old = oldServer(db, peer, s.table);
    try {
      await fn({ ...s, old });
    } finally {
      await old.close();
    }
  });
}

async function namesIn(db: SqlDatabase, peer: PeerSchema, table: string): Promise<string[]> {
  const sql = `SELECT ${peer.key} AS name FROM ${table}`;
  if (db.name === 'postgres') {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query(sql)).rows.map((r: { name: string }) => r.name);
    } finally {
      await c.end();
    }
  }
  const c = await mysql.createConnection({ uri: db.url });
  try {
    return (await c.query<mysql.RowDataPacket[]>(sql))[0].map((r) => String(r.name));
  } finally {
    await c.end();
  }
}

const tmp = () => mkdtempSync(join(tmpdir(), 'sequoia-migrate-forgotten-'));

for (const db of SQL_DATABASES) {
  const describeDb = await describeWithService(db.service, db.probe);
  for (const peer of [LEAF, TINYID]) {
    describeDb(`sequoia migrate, a forgotten ${peer.title} server: ${db.name}`, () => {
      it('its next two maximum-step loads fail loudly (no row); 0 IDs in common with the new store', async () => {
        await withOldServer(db, peer, async ({ table, from, base, store, old }) => {
          const before = await old.load(); // it was serving before the migration
          const run = sequoia(['migrate', '--from', from, '--store', store]);
          expect(run.stderr).toBe('');
          expect(run.status).toBe(0);
          const issued = genSegment(store, join(base, 'state'), 5000);
          expect(issued.every((id) => id >= before[1])).toBe(true);

          const loads: Array<[bigint, bigint]> = [];
          const failures: string[] = [];
          for (let i = 0; i < 2; i++) {
            try {
              loads.push(await old.load());
            } catch (e) {
              failures.push(e instanceof Error ? e.message : String(e));
            }
          }
          const common = overlapping(issued, loads);
          console.log(
            `[forgotten ${peer.title} ${db.name}] new store issued ${issued.length} IDs from ${issued[0]}; ` +
              `old server's loads after migrate: ${loads.map(([a, b]) => `[${a}, ${b})`).join(' ') || 'none'}; ` +
              `failed: ${failures.length}; IDs in common: ${common}`,
          );
          expect(common, 'IDs handed out by both the new store and the forgotten server').toBe(0);
          expect(failures).toHaveLength(2);
          for (const f of failures) expect(f).toMatch(/no row|can not find biztype/);
          expect(run.stdout).toContain(`source row retired (as ${TAG}#sequoia-retired)`);

          // run again: the retired row is where it was read; nothing changes
          const again = sequoia(['migrate', '--from', from, '--store', store, '--json']);
          expect(again.status, again.stderr).toBe(0);
          expect(JSON.parse(again.stdout)).toMatchObject([
            { tag: TAG, action: 'keep', source: 'retired-earlier', retiredAs: `${TAG}#sequoia-retired`, movedFrom: null },
          ]);
          // the old table keeps the row, under a name no old server asks for, where migrate read it
          expect(await namesIn(db, peer, table)).toEqual([`${TAG}#sequoia-retired`]);

          // an admin inserts the row again (as the peer's README says to add a tag): refused, nothing moves
          await db.exec(rowSql(peer, table));
          const both = sequoia(['migrate', '--from', from, '--store', store]);
          expect(both.status).toBe(2);
          expect(both.stderr).toContain('the row was inserted again after an earlier migrate retired it');
          expect((await namesIn(db, peer, table)).sort()).toEqual([TAG, `${TAG}#sequoia-retired`]);
        });
      }, 120_000);

      it('--keep-source leaves the row: the old server keeps loading, and migrate run again raises the copy above it', async () => {
        await withOldServer(db, peer, async ({ from, store, old }) => {
          const run = sequoia(['migrate', '--from', from, '--store', store, '--keep-source', '--margin', '10']);
          expect(run.status, run.stderr).toBe(0);
          expect(run.stdout).toContain('source row kept (--keep-source');
          const first = BigInt(tagOf(store)?.maxId ?? '0');
          const loaded = await old.load(); // side by side on purpose: the row is still there
          expect(loaded[1]).toBeGreaterThan(first); // past the margin: what the docs say --keep-source leaves to the team
          const again = sequoia(['migrate', '--from', from, '--store', store, '--keep-source', '--margin', '10', '--json']);
          expect(again.status, again.stderr).toBe(0);
          expect(JSON.parse(again.stdout)).toMatchObject([{ tag: TAG, action: 'raise', source: 'keep', retiredAs: null }]);
          expect(BigInt(tagOf(store)?.maxId ?? '0')).toBe(loaded[1] + 10n);
        });
      }, 120_000);

      it('a load committed while migrate waits for the row: read again under the lock, the copy starts above it', async () => {
        await withTables(db, peer, async ({ table, from, store }) => {
          // An old server's load, open: its row lock is held until it commits.
          const open = await openLoad(db, peer, table);
          let out = '';
          let err = '';
          const child = spawn(process.execPath, [BIN, 'migrate', '--from', from, '--store', store, '--margin', '0', '--json'], {
            env: cleanEnv(),
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
          child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
          const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
          try {
            // migrate has listed the row (the open load is not visible to it) and now waits for the row's lock
            await open.untilWaitedOn(() => child.exitCode !== null);
            const end = await open.commit();
            expect(await exited, err).toBe(0);
            const [step] = JSON.parse(out) as Array<{ sourceNext: string; movedFrom: string | null; source: string }>;
            expect(step).toMatchObject({ source: 'retire', sourceNext: String(end) });
            expect(step?.movedFrom).not.toBeNull();
            expect(BigInt(tagOf(store)?.maxId ?? '0')).toBe(end);
          } finally {
            child.kill('SIGKILL');
            await open.close();
          }
        });
      }, 120_000);
    });
  }
}

/** One load of the peer, its update made but not committed: the row stays locked until `commit`. */
interface OpenLoad {
  /** Resolves once another session waits for this one's lock (or `gaveUp` says the waiter is gone). */
  untilWaitedOn(gaveUp: () => boolean): Promise<void>;
  /** Commits; answers where the next range now starts (Sequoia's terms). */
  commit(): Promise<bigint>;
  close(): Promise<void>;
}

async function openLoad(db: SqlDatabase, peer: PeerSchema, table: string): Promise<OpenLoad> {
  const key = peer.key;
  // Leaf's UPDATE; Tinyid's optimistic update of the row as read (version 1, max_id 1000).
  const update =
    peer.name === 'leaf'
      ? `UPDATE ${table} SET max_id = max_id + ${MAX_STEP} WHERE ${key} = '${TAG}'`
      : `UPDATE ${table} SET max_id = ${1000 + MAX_STEP}, update_time = now(), version = version + 1 WHERE max_id = 1000 AND version = 1 AND ${key} = '${TAG}'`;
  const next = peer.name === 'leaf' ? BigInt(1000 + MAX_STEP) : BigInt(1000 + MAX_STEP + 1);
  const poll = async (waiting: () => Promise<boolean>, gaveUp: () => boolean) => {
    while (!(await waiting())) {
      if (gaveUp()) throw new Error('migrate ended before it waited for the row');
      // MariaDB refreshes INNODB_TRX only when it was not read for 100 ms: a faster poll would read a stale copy forever.
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  if (db.name === 'postgres') {
    const c = new pg.Client({ connectionString: db.url });
    const watch = new pg.Client({ connectionString: db.url });
    await c.connect();
    await watch.connect();
    await c.query('BEGIN');
    await c.query(update);
    const pid = ((await c.query('SELECT pg_backend_pid() AS pid')).rows[0] as { pid: number }).pid;
    return {
      untilWaitedOn: (gaveUp) =>
        poll(
          async () =>
            (
              (await watch.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid]))
                .rows[0] as { n: number }
            ).n > 0,
          gaveUp,
        ),
      commit: async () => {
        await c.query('COMMIT');
        return next;
      },
      close: async () => {
        await c.end().catch(() => {});
        await watch.end().catch(() => {});
      },
    };
  }
  const c = await mysql.createConnection({ uri: db.url });
  const watch = await mysql.createConnection({ uri: db.url });
  await c.query('START TRANSACTION');
  await c.query(update);
  const [[me]] = await c.query<mysql.RowDataPacket[]>('SELECT CONNECTION_ID() AS id');
  return {
    untilWaitedOn: (gaveUp) =>
      poll(async () => {
        const [rows] = await watch.query<mysql.RowDataPacket[]>(
          `SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id <> ? AND trx_query LIKE ?`,
          [me?.id, `%${table}%`],
        );
        return Number(rows[0]?.n) > 0;
      }, gaveUp),
    commit: async () => {
      await c.query('COMMIT');
      return next;
    },
    close: async () => {
      await c.end().catch(() => {});
      await watch.end().catch(() => {});
    },
  };
}
