/**
 * `sequoia audit` never calls nothing clean, and says what went wrong in
 * words (the built command, real processes): an empty stdin, an empty file
 * and a query that selects no row exit 2 unless `--allow-empty` says so (then
 * "0 IDs read", exit 0); a directory given as the file, a database nobody
 * listens on (PostgreSQL, MariaDB) and a missing --tmp-dir exit 2 with a
 * message that names the problem, with no errno text and no host.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, assertBuilt, cleanEnv, sequoia } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { describeWithService } from '../helpers/services.js';

const PG_URL = process.env.SEQUOIA_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

let dir: string;
let store: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-audit-refusals-'));
  store = `sqlite:${join(dir, 'store.db')}`;
  const made = sequoia(['tag', 'create', 'orders', '--store', store]);
  expect(made.status, made.stderr).toBe(0);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The command with `input` on its stdin (an empty string: an empty stdin). */
function audit(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  assertBuilt();
  const r = spawnSync(process.execPath, [BIN, 'audit', ...args], {
    encoding: 'utf8',
    env: cleanEnv(),
    input: input ?? '',
    timeout: 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Exit 2, the message on stderr, nothing on stdout that could pass for a result. */
function refused(r: { status: number | null; stdout: string; stderr: string }, message: RegExp): void {
  expect(r.status, r.stdout + r.stderr).toBe(2);
  expect(r.stderr).toMatch(message);
  expect(r.stdout).not.toMatch(/clean/);
}

/** No raw driver or file-system text: no errno code, no `connect …`, no address. */
function inWords(stderr: string): void {
  expect(stderr).not.toMatch(/E[A-Z]{4,}|connect |127\.0\.0\.1|localhost|\bat [^ ]+:\d+/);
  expect(stderr.trim().split('\n')).toHaveLength(1);
}

describe('audit refuses to call an empty input clean', () => {
  it('an empty stdin exits 2; with --allow-empty it says "0 IDs read" and exits 0', () => {
    for (const args of [
      ['--tag', 'orders', '--store', store],
      ['-', '--tag', 'orders', '--store', store],
    ])
      refused(audit(args, ''), /0 IDs read \(stdin was empty\).*--allow-empty/);
    const allowed = audit(['--tag', 'orders', '--store', store, '--allow-empty'], '');
    expect(allowed.status, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(/^0 IDs read: nothing was checked/m);
    expect(allowed.stdout).not.toMatch(/clean/);
    const json = audit(['--tag', 'orders', '--store', store, '--allow-empty', '--json'], '');
    expect(json.status, json.stderr).toBe(0);
    const j = JSON.parse(json.stdout) as { summary: { count: number }; notChecked: string[] };
    expect(j.summary.count).toBe(0);
    expect(j.notChecked).toContain('0 IDs read (--allow-empty): no ID was checked');
  });

  it('an empty file (and one of blank lines) exits 2; with --allow-empty exits 0', () => {
    const empty = join(dir, 'empty.txt');
    writeFileSync(empty, '');
    refused(audit([empty, '--tag', 'orders', '--store', store]), /0 IDs read \(".*empty\.txt" holds no ID\)/);
    const blank = join(dir, 'blank.txt');
    writeFileSync(blank, '\n\n');
    refused(audit([blank, '--tag', 'orders', '--store', store]), /0 IDs read/);
    // A CSV with only its header: no ID either.
    const header = join(dir, 'header.csv');
    writeFileSync(header, 'name,id\n');
    refused(audit([header, '--csv-column', 'id', '--tag', 'orders', '--store', store]), /0 IDs read/);
    expect(audit([empty, '--tag', 'orders', '--store', store, '--allow-empty']).status).toBe(0);
    // Snowflake IDs too.
    refused(audit([empty, '--layout', 'twitter']), /0 IDs read/);
  });

  it('a --query on SQLite that selects no row exits 2; with --allow-empty exits 0', async () => {
    const { default: Database } = await import('better-sqlite3');
    const file = join(dir, 'business.db');
    const db = new Database(file);
    db.exec('CREATE TABLE orders (id INTEGER NOT NULL); INSERT INTO orders VALUES (5)');
    db.close();
    const args = ['--db', `sqlite:${file}`, '--query', 'SELECT id FROM orders WHERE id > 100', '--tag', 'orders', '--store', store];
    refused(audit(args), /0 IDs read \(the query selected no row\)/);
    expect(audit([...args, '--allow-empty']).status).toBe(0);
  });
});

describe('audit says what went wrong in words', () => {
  it('a directory given as the file', () => {
    const r = audit([dir, '--tag', 'orders', '--store', store]);
    refused(r, /is a directory: give a file of IDs/);
    inWords(r.stderr);
    const missing = audit([join(dir, 'no-such.txt'), '--tag', 'orders', '--store', store]);
    refused(missing, /cannot read ".*no-such\.txt": no such file/);
    inWords(missing.stderr);
  });

  it('--tmp-dir that does not exist, or is a file, is refused naming the flag, before any input is read', () => {
    const r = audit(['--tag', 'orders', '--store', store, '--tmp-dir', join(dir, 'nonexistent')], '5\n');
    refused(r, /--tmp-dir: ".*nonexistent" does not exist/);
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    refused(audit(['--tag', 'orders', '--store', store, '--tmp-dir', file], '5\n'), /--tmp-dir: ".*a-file" is not a directory/);
  });

  it('a --db nobody listens on (PostgreSQL, MySQL) and a SQLite file that does not exist', async () => {
    const port = await freePort();
    for (const [url, engine] of [
      [`postgres://postgres@127.0.0.1:${port}/test`, 'PostgreSQL'],
      [`mysql://root@127.0.0.1:${port}/test`, 'MySQL'],
    ] as const) {
      const r = audit(['--db', url, '--query', 'SELECT id FROM orders', '--tag', 'orders', '--store', store]);
      refused(r, new RegExp(`--db: cannot read the ${engine} database: connection refused`));
      inWords(r.stderr);
    }
    const r = audit(['--db', `sqlite:${join(dir, 'nowhere', 'x.db')}`, '--query', 'SELECT 1', '--tag', 'orders', '--store', store]);
    refused(r, /--db: no SQLite file at/);
    refused(audit(['--db', `sqlite:${dir}`, '--query', 'SELECT 1', '--tag', 'orders', '--store', store]), /--db: .* is not a file/);
  });
});

const describePg = await describeWithService('postgres', async () => {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.end();
});

describePg('audit --db on PostgreSQL: a query that selects no row', () => {
  const table = `audit_empty_${process.pid}`;
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE TABLE ${table} (id bigint NOT NULL); INSERT INTO ${table} VALUES (5)`);
  });
  afterAll(async () => {
    await admin.query(`DROP TABLE IF EXISTS ${table}`);
    await admin.end();
  });

  it('exits 2 (a wrong WHERE is no evidence); with --allow-empty exits 0; a failing query says what the database said', () => {
    const args = ['--db', PG_URL, '--query', `SELECT id FROM ${table} WHERE id > 100`, '--tag', 'orders', '--store', store];
    refused(audit(args), /0 IDs read \(the query selected no row\)/);
    const allowed = audit([...args, '--allow-empty']);
    expect(allowed.status, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(/0 IDs read/);
    const bad = audit(['--db', PG_URL, '--query', `SELECT id FROM ${table}_missing`, '--tag', 'orders', '--store', store]);
    refused(bad, /--db: the PostgreSQL database answered: relation ".*_missing" does not exist/);
  });
});
