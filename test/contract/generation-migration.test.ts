/**
 * Tables made before tag generations existed (schema version 1, no
 * `generation` column) are migrated by init(): the column is added once, even
 * when several processes start at once; existing tags read generation '0'
 * (a creation before generations), keep their max_id, allocate and give back
 * as before; every tag created afterwards gets a random generation.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { MysqlSegmentStore } from '../../src/adapters/mysql/mysql-segment-store.js';
import { PostgresSegmentStore } from '../../src/adapters/postgres/postgres-segment-store.js';
import { SqliteSegmentStore } from '../../src/adapters/sqlite/sqlite-segment-store.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from './backends.js';
import { ensureDist } from './ensure-dist.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** What every migrated store must show, through `stores` (several instances on the migrated table). */
async function expectMigrated(stores: SegmentStore[]): Promise<void> {
  await Promise.all(stores.map((s) => s.init())); // several at once
  const [store] = stores as [SegmentStore];
  const old = await store.getTag('old');
  expect(old).toMatchObject({ maxId: 51n, step: 10, fenceEpoch: 0, generation: '0' });
  const a = await store.allocate('old');
  expect(a).toMatchObject({ maxId: 61n, generation: '0' });
  expect(await store.giveBack('old', 55n, { maxId: a.maxId, fenceEpoch: a.fenceEpoch, generation: '1' })).toBe(false);
  expect(await store.giveBack('old', 55n, { maxId: a.maxId, fenceEpoch: a.fenceEpoch, generation: a.generation })).toBe(true);
  const created = await store.createTag({ tag: 'new', step: 10 });
  expect(created.generation).toMatch(/^[1-9][0-9]*$/);
  await store.deleteTag('old');
  const again = await store.createTag({ tag: 'old', step: 10, start: 51n });
  expect(again.generation).not.toBe('0');
  expect(await store.giveBack('old', 51n, { maxId: 51n, fenceEpoch: 0, generation: '0' })).toBe(false); // the legacy creation is gone
}

describe('generation migration: SQLite', () => {
  function oldFile(): string {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-gen-migrate-'));
    dirs.push(dir);
    const file = join(dir, 'old.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec(`CREATE TABLE sequoia_schema (version INTEGER NOT NULL);
      INSERT INTO sequoia_schema (version) VALUES (1);
      CREATE TABLE sequoia_alloc (
        tag TEXT PRIMARY KEY NOT NULL, max_id INTEGER NOT NULL, step INTEGER NOT NULL,
        description TEXT NOT NULL DEFAULT '', updated_at INTEGER NOT NULL, fence_epoch INTEGER NOT NULL DEFAULT 0);
      INSERT INTO sequoia_alloc (tag, max_id, step, description, updated_at, fence_epoch) VALUES ('old', 51, 10, '', 0, 0);`);
    db.close();
    return file;
  }

  it('in one process: the column is added once, old tags read generation 0', async () => {
    const file = oldFile();
    const stores = [new SqliteSegmentStore({ path: file }), new SqliteSegmentStore({ path: file })];
    try {
      await expectMigrated(stores);
      const db = new Database(file, { readonly: true });
      const cols = (db.prepare('PRAGMA table_info(sequoia_alloc)').all() as { name: string }[]).map((c) => c.name);
      expect(cols.filter((c) => c === 'generation')).toHaveLength(1);
      expect((db.prepare('SELECT version FROM sequoia_schema').get() as { version: number }).version).toBe(2);
      db.close();
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('four processes migrating and allocating at once: one column, disjoint ranges', async () => {
    const file = oldFile();
    const dist = await ensureDist();
    const script = fileURLToPath(new URL('./allocate-child.mjs', import.meta.url));
    const outs = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<{ maxId: string; generation: string }[]>((resolve, reject) => {
            const child = spawn(process.execPath, [script, dist, `sqlite:${file}`, 'old', '5', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
            let out = '';
            let err = '';
            child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
            child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
            child.on('close', (code) =>
              code === 0 ? resolve(JSON.parse(out) as { maxId: string; generation: string }[]) : reject(new Error(err)),
            );
          }),
      ),
    );
    const ends = outs.flat().map((a) => a.maxId);
    expect(new Set(ends).size).toBe(20);
    expect(outs.flat().every((a) => a.generation === '0')).toBe(true);
    const db = new Database(file, { readonly: true });
    const cols = (db.prepare('PRAGMA table_info(sequoia_alloc)').all() as { name: string }[]).map((c) => c.name);
    expect(cols.filter((c) => c === 'generation')).toHaveLength(1);
    db.close();
  }, 240_000);
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('generation migration: PostgreSQL', () => {
  it('a version-1 table gets the column once, with several instances initialising at once', async () => {
    const table = uniqueName('sq_gen');
    const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    admin.on('error', () => {});
    const stores = Array.from({ length: 4 }, () => new PostgresSegmentStore({ connectionString: POSTGRES_URL, table }));
    try {
      await admin.query('CREATE TABLE IF NOT EXISTS sequoia_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)');
      await admin.query(`CREATE TABLE ${table} (tag TEXT PRIMARY KEY, max_id BIGINT NOT NULL CHECK (max_id >= 0), step INTEGER NOT NULL CHECK (step > 0),
        description TEXT NOT NULL DEFAULT '', updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), fence_epoch INTEGER NOT NULL DEFAULT 0)`);
      await admin.query('INSERT INTO sequoia_schema (component, version) VALUES ($1, 1)', [table]);
      await admin.query(`INSERT INTO ${table} (tag, max_id, step) VALUES ('old', 51, 10)`);
      await expectMigrated(stores);
      const v = await admin.query('SELECT version FROM sequoia_schema WHERE component = $1', [table]);
      expect(v.rows[0]).toEqual({ version: 3 });
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
      await admin.query('DELETE FROM sequoia_schema WHERE component = $1', [table]).catch(() => {});
      await admin.end();
    }
  });
});

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('generation migration: MySQL/MariaDB', () => {
  it('a version-1 table gets the column once, with several instances initialising at once', async () => {
    const table = uniqueName('sq_gen');
    const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 2 });
    const stores = Array.from({ length: 4 }, () => new MysqlSegmentStore({ uri: MYSQL_URL, table }));
    try {
      await admin.query(`CREATE TABLE IF NOT EXISTS sequoia_schema (
        component VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, version INT NOT NULL) ENGINE=InnoDB`);
      await admin.query(`CREATE TABLE ${table} (tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
        max_id BIGINT NOT NULL, step INT NOT NULL, description TEXT NOT NULL, updated_at DATETIME(3) NOT NULL,
        fence_epoch INT NOT NULL DEFAULT 0) ENGINE=InnoDB`);
      await admin.query('INSERT INTO sequoia_schema (component, version) VALUES (?, 1)', [table]);
      await admin.query(`INSERT INTO ${table} (tag, max_id, step, description, updated_at) VALUES ('old', 51, 10, '', UTC_TIMESTAMP(3))`);
      await expectMigrated(stores);
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SELECT version FROM sequoia_schema WHERE component = ?', [table]);
      expect(Number(rows[0]?.version)).toBe(3);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
      await admin.query('DELETE FROM sequoia_schema WHERE component = ?', [table]).catch(() => {});
      await admin.end();
    }
  });
});
