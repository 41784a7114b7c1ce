/**
 * `sequoia bench pk` on real PostgreSQL, MariaDB and SQLite with a small row
 * count: every kind is inserted (counted in its table, with the column type
 * the kind promises), every report column is filled plausibly, the scratch
 * objects are gone afterwards, and objects the tool did not create are never
 * touched (a same-named schema/database/file without the marker is refused and
 * left as it was; a table planted in the scratch schema survives the drop).
 */
import { mkdtempSync, existsSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPkBenchTarget, runPkBench, type PkBenchOptions, type PkBenchResult } from '../../src/app/pk-bench.js';
import { PK_KINDS, parsePkKinds } from '../../src/core/pk-bench/pk-kinds.js';
import { systemClock } from '../../src/core/clock.js';
import { systemRandom } from '../../src/core/random.js';
import type { PkBenchTarget } from '../../src/ports/pk-bench-target.js';
import { PK_TABLE_HEADER, pkTableRows } from '../../src/cli/pk-report.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from '../contract/backends.js';

const SMALL: PkBenchOptions = {
  kinds: parsePkKinds(undefined),
  rows: 240,
  warmup: 30,
  batch: 20,
  concurrency: 2,
  width: 40,
  indexes: 1,
  servers: 3,
  step: 50,
  slices: 3,
};
const hooks = { clock: systemClock, random: systemRandom };
const EXPECTED_KINDS = ['sequence', 'segment', 'snowflake', 'uuidv7', 'uuidv4', 'uuidv4-text', 'ulid'];

function expectPlausible(result: PkBenchResult, opts: { log: boolean; splits: boolean; pageGrain?: boolean }): void {
  expect(result.interrupted).toBe(false);
  expect(result.results.map((r) => r.kind)).toEqual(EXPECTED_KINDS);
  for (const r of result.results) {
    expect(r.rows, r.kind).toBe(SMALL.rows);
    expect(r.seconds, r.kind).toBeGreaterThan(0);
    expect(r.rowsPerSecond, r.kind).toBeGreaterThan(0);
    expect(r.rowsPerSecond, r.kind).toBeCloseTo(r.rows / r.seconds, 6);
    expect(r.p50Ms, r.kind).toBeGreaterThan(0);
    expect(r.p99Ms, r.kind).toBeGreaterThanOrEqual(r.p50Ms);
    expect(r.tableBytes, r.kind).toBeGreaterThan(0);
    expect(r.indexBytes, r.kind).toBeGreaterThan(0);
    expect(r.totalBytes).toBe(r.tableBytes + r.indexBytes);
    if (opts.log) expect(r.logBytes, r.kind).toBeGreaterThan(0);
    if (opts.splits) expect(r.pageSplits, r.kind).toBeGreaterThanOrEqual(0);
    else expect(r.pageSplits).toBeNull();
    expect(r.vsBaseline.time).toBeGreaterThan(0);
    expect(r.vsBaseline.size).toBeGreaterThan(0);
    if (opts.log) expect(r.vsBaseline.log, r.kind).toBeGreaterThan(0);
  }
  // The report as printed: every cell filled; `n/a` only where the engine counts no page splits.
  const splitsColumn = PK_TABLE_HEADER.indexOf('page splits');
  for (const row of pkTableRows(result)) {
    expect(row).toHaveLength(PK_TABLE_HEADER.length);
    row.forEach((cell, i) => {
      expect(cell, `${row[0]}: ${PK_TABLE_HEADER[i]}`).not.toBe('');
      if (i === splitsColumn && !opts.splits) expect(cell).toBe('n/a');
      else expect(cell, `${row[0]}: ${PK_TABLE_HEADER[i]}`).not.toMatch(/n\/a|NaN|Infinity/);
    });
  }
  const base = result.results[0]!;
  expect(base.vsBaseline.time).toBeCloseTo(1, 10);
  expect(base.vsBaseline.size).toBeCloseTo(1, 10);
  if (opts.log) expect(base.vsBaseline.log).toBeCloseTo(1, 10);
  // 36-character keys take more room than the 8-byte sequence (InnoDB counts whole 16 KiB pages: a tiny table may not show it)
  const by = Object.fromEntries(result.results.map((r) => [r.kind, r]));
  if (opts.pageGrain) expect(by['uuidv4-text']!.totalBytes).toBeGreaterThanOrEqual(base.totalBytes);
  else expect(by['uuidv4-text']!.totalBytes).toBeGreaterThan(base.totalBytes);
}

/** Runs the bench, looking into the scratch object (`inspect`) before it is dropped. */
async function runAndInspect(target: PkBenchTarget, inspect: () => Promise<void>): Promise<PkBenchResult> {
  try {
    const result = await runPkBench(target, SMALL, hooks);
    await inspect();
    return result;
  } finally {
    await target.dropScratch();
    await target.close();
  }
}

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('bench pk on PostgreSQL', () => {
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  admin.on('error', () => {});
  afterAll(() => admin.end());
  const schemaExists = async (s: string) => (await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [s])).rowCount === 1;

  it('inserts every kind, fills every column, and drops its schema', async () => {
    const scratch = uniqueName('sq_pk');
    const target = await openPkBenchTarget(POSTGRES_URL, { scratch, concurrency: 2 });
    const result = await runAndInspect(target, async () => {
      expect(await schemaExists(scratch)).toBe(true);
      const comment = await admin.query("SELECT obj_description(oid, 'pg_namespace') AS c FROM pg_namespace WHERE nspname = $1", [scratch]);
      expect(comment.rows[0].c).toMatch(/sequoia bench pk run/);
      for (const k of EXPECTED_KINDS) {
        const t = `pk_${k.replace('-', '_')}`;
        const n = await admin.query(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM "${scratch}".${t}`);
        expect(n.rows[0], k).toEqual({ n: SMALL.rows + SMALL.warmup, d: SMALL.rows + SMALL.warmup });
      }
      const types = await admin.query(
        'SELECT table_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND column_name = $2',
        [scratch, 'id'],
      );
      const type = Object.fromEntries(types.rows.map((r: { table_name: string; data_type: string }) => [r.table_name, r.data_type]));
      expect(type).toMatchObject({
        pk_sequence: 'bigint',
        pk_segment: 'bigint',
        pk_snowflake: 'bigint',
        pk_uuidv7: 'uuid',
        pk_uuidv4: 'uuid',
        pk_uuidv4_text: 'text',
        pk_ulid: 'text',
      });
      // UUIDv7 keys are version 7 and rise with insertion order; v4 are version 4
      const v7 = await admin.query(`SELECT id::text AS id FROM "${scratch}".pk_uuidv7 LIMIT 1`);
      expect(v7.rows[0].id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
      const v4 = await admin.query(`SELECT id::text AS id FROM "${scratch}".pk_uuidv4 LIMIT 1`);
      expect(v4.rows[0].id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
    });
    expectPlausible(result, { log: true, splits: false });
    expect(result.target.engine).toBe('postgresql');
    expect(result.target.settings.shared_buffers).toBeTruthy();
    expect(await schemaExists(scratch)).toBe(false);
  });

  it('refuses a same-named schema it did not create and leaves it and its data as they were', async () => {
    const scratch = uniqueName('sq_pk');
    await admin.query(`CREATE SCHEMA "${scratch}"`);
    await admin.query(`CREATE TABLE "${scratch}".pk_sequence (id int PRIMARY KEY)`);
    await admin.query(`INSERT INTO "${scratch}".pk_sequence VALUES (1), (2)`);
    try {
      const target = await openPkBenchTarget(POSTGRES_URL, { scratch, concurrency: 1 });
      await expect(runPkBench(target, SMALL, hooks)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/not created by .*no marker.*untouched/),
      });
      await target.dropScratch();
      await expect(target.dropLeftover()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await target.close();
      expect((await admin.query(`SELECT count(*)::int AS n FROM "${scratch}".pk_sequence`)).rows[0].n).toBe(2);
    } finally {
      await admin.query(`DROP SCHEMA "${scratch}" CASCADE`);
    }
  });

  it('a table someone else puts into the scratch schema survives: the schema is left, with it', async () => {
    const scratch = uniqueName('sq_pk');
    const target = await openPkBenchTarget(POSTGRES_URL, { scratch, concurrency: 1 });
    try {
      await runPkBench(target, { ...SMALL, kinds: parsePkKinds('uuidv7'), rows: 20, warmup: 0 }, hooks);
      await admin.query(`CREATE TABLE "${scratch}".theirs (x int)`);
      await expect(target.dropScratch()).rejects.toThrow(/did not create.*left/);
      const left = await admin.query('SELECT tablename FROM pg_tables WHERE schemaname = $1', [scratch]);
      expect(left.rows.map((r: { tablename: string }) => r.tablename)).toEqual(['theirs']);
    } finally {
      await target.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${scratch}" CASCADE`);
    }
  });

  it('a leftover of an interrupted run is recognised by its marker and dropped only on --drop-leftover', async () => {
    const scratch = uniqueName('sq_pk');
    const first = await openPkBenchTarget(POSTGRES_URL, { scratch, concurrency: 1 });
    await runPkBench(first, { ...SMALL, kinds: parsePkKinds('segment'), rows: 20, warmup: 0 }, hooks);
    await first.close(); // as a killed process would: no drop
    try {
      const second = await openPkBenchTarget(POSTGRES_URL, { scratch, concurrency: 1 });
      await expect(runPkBench(second, SMALL, hooks)).rejects.toThrow(/left by an earlier .*--drop-leftover/);
      expect(await second.dropLeftover()).toMatch(/dropped PostgreSQL schema/);
      await second.close();
      expect(await schemaExists(scratch)).toBe(false);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${scratch}" CASCADE`);
    }
  });
});

const describeMy = await describeWithService('MariaDB', probeMysql);
describeMy('bench pk on MariaDB/MySQL', () => {
  let admin: mysql.Pool;
  beforeAll(() => {
    admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 2 });
  });
  afterAll(() => admin.end());
  const dbExists = async (d: string) =>
    ((await admin.query('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [d]))[0] as unknown[]).length === 1;

  it('inserts every kind, fills every column (page splits included), and drops its database', async () => {
    const scratch = uniqueName('sq_pk');
    const target = await openPkBenchTarget(MYSQL_URL, { scratch, concurrency: 2 });
    const result = await runAndInspect(target, async () => {
      for (const k of EXPECTED_KINDS) {
        const [rows] = await admin.query(`SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM \`${scratch}\`.pk_${k.replace('-', '_')}`);
        expect((rows as { n: number; d: number }[])[0], k).toEqual({ n: SMALL.rows + SMALL.warmup, d: SMALL.rows + SMALL.warmup });
      }
      const [types] = await admin.query(
        "SELECT TABLE_NAME AS t, COLUMN_TYPE AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND COLUMN_NAME = 'id'",
        [scratch],
      );
      const type = Object.fromEntries((types as { t: string; c: string }[]).map((r) => [r.t, r.c]));
      expect(type).toMatchObject({
        pk_sequence: 'bigint(20)',
        pk_segment: 'bigint(20)',
        pk_uuidv7: 'binary(16)',
        pk_uuidv4: 'binary(16)',
        pk_uuidv4_text: 'char(36)',
        pk_ulid: 'char(26)',
      });
    });
    expectPlausible(result, { log: true, splits: true, pageGrain: true });
    expect(result.results.reduce((a, r) => a + (r.pageSplits ?? 0), 0)).toBeGreaterThan(0);
    expect(result.target.settings.innodb_buffer_pool_size).toMatch(/^\d+$/);
    expect(await dbExists(scratch)).toBe(false);
  });

  it('refuses a same-named database it did not create and leaves it and its data as they were', async () => {
    const scratch = uniqueName('sq_pk');
    await admin.query(`CREATE DATABASE \`${scratch}\``);
    await admin.query(`CREATE TABLE \`${scratch}\`.pk_sequence (id INT PRIMARY KEY)`);
    await admin.query(`INSERT INTO \`${scratch}\`.pk_sequence VALUES (1), (2)`);
    try {
      const target = await openPkBenchTarget(MYSQL_URL, { scratch, concurrency: 1 });
      await expect(runPkBench(target, SMALL, hooks)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/not created by/),
      });
      await target.dropScratch();
      await expect(target.dropLeftover()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await target.close();
      const [rows] = await admin.query(`SELECT COUNT(*) AS n FROM \`${scratch}\`.pk_sequence`);
      expect((rows as { n: number }[])[0]!.n).toBe(2);
    } finally {
      await admin.query(`DROP DATABASE \`${scratch}\``);
    }
  });

  it('a table someone else puts into the scratch database survives: the database is left, with it', async () => {
    const scratch = uniqueName('sq_pk');
    const target = await openPkBenchTarget(MYSQL_URL, { scratch, concurrency: 1 });
    try {
      await runPkBench(target, { ...SMALL, kinds: parsePkKinds('uuidv4'), rows: 20, warmup: 0 }, hooks);
      await admin.query(`CREATE TABLE \`${scratch}\`.theirs (x INT)`);
      await expect(target.dropScratch()).rejects.toThrow(/did not create \(theirs\)/);
      const [left] = await admin.query('SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY 1', [
        scratch,
      ]);
      expect((left as { t: string }[]).map((r) => r.t)).toEqual(['sequoia_bench_pk_marker', 'theirs']);
    } finally {
      await target.close();
      await admin.query(`DROP DATABASE IF EXISTS \`${scratch}\``);
    }
  });
});

describe('bench pk on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-pk-'));

  it('inserts every kind, fills every column, and deletes its file', async () => {
    const path = join(dir, 'bench.db');
    const target = await openPkBenchTarget(`sqlite:${path}`, { concurrency: 4 });
    const result = await runAndInspect(target, async () => {
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(path, { readonly: true });
      try {
        for (const k of EXPECTED_KINDS) {
          const r = db.prepare(`SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM pk_${k.replace('-', '_')}`).get();
          expect(r, k).toEqual({ n: SMALL.rows + SMALL.warmup, d: SMALL.rows + SMALL.warmup });
        }
        expect((db.prepare('SELECT typeof(id) AS t FROM pk_uuidv7 LIMIT 1').get() as { t: string }).t).toBe('blob');
      } finally {
        db.close();
      }
    });
    expectPlausible(result, { log: true, splits: false });
    expect(result.options.concurrency).toBe(1);
    expect(existsSync(path)).toBe(false);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('times the run on the monotonic clock: a wall clock stepped back a day meanwhile gives no negative duration', async () => {
    const target = await openPkBenchTarget(`sqlite:${join(dir, 'stepped.db')}`, { concurrency: 1 });
    let readings = 0;
    // NTP steps the clock back a day right after the run's first reading.
    const stepped = { now: () => Date.now() - (readings++ === 0 ? 0 : 24 * 3600_000), monotonic: () => performance.now() };
    try {
      const result = await runPkBench(
        target,
        { ...SMALL, kinds: parsePkKinds('uuidv4'), rows: 20, warmup: 0 },
        { clock: stepped, random: systemRandom },
      );
      expect(result.seconds).toBeGreaterThanOrEqual(0);
    } finally {
      await target.dropScratch();
      await target.close();
    }
  });

  it('refuses a file that exists and leaves it byte for byte', async () => {
    const path = join(dir, 'theirs.db');
    writeFileSync(path, 'not mine');
    const target = await openPkBenchTarget(`sqlite:${path}`, { concurrency: 1 });
    await expect(runPkBench(target, SMALL, hooks)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/not created by/),
    });
    await target.dropScratch();
    await expect(target.dropLeftover()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await target.close();
    expect(readFileSync(path, 'utf8')).toBe('not mine');
  });
});

describe('kinds', () => {
  it('the baseline always runs first; unknown kinds are refused', () => {
    expect(parsePkKinds('ulid,uuidv7').map((k) => k.name)).toEqual(['sequence', 'ulid', 'uuidv7']);
    expect(() => parsePkKinds('uuidv9')).toThrow(/unknown kind "uuidv9"/);
    expect(PK_KINDS.ulid.textLength).toBe(26);
  });
});
