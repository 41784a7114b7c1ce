/**
 * `sequoia bench pk` as users run it (the built command): bad input exits 2
 * with a message, a run on SQLite prints JSON and writes an SVG and leaves no
 * file behind, and Ctrl-C (SIGINT) during a PostgreSQL run drops the scratch
 * schema before the command exits.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { BIN, cleanEnv, sequoia } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { POSTGRES_URL, probePostgres, uniqueName } from '../contract/backends.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sequoia-pk-cli-'));

describe('sequoia bench pk: input', () => {
  const db = () => `sqlite:${join(tmp(), 'b.db')}`;
  it.each([
    [['bench', 'pk'], /required option '--db <url>'/],
    [['bench', 'pk', '--db', db(), '--rows', '0'], /--rows must be an integer from 1/],
    [['bench', 'pk', '--db', db(), '--batch', 'lots'], /--batch must be an integer/],
    [['bench', 'pk', '--db', db(), '--concurrency', '65'], /--concurrency must be an integer from 1 to 64/],
    [['bench', 'pk', '--db', db(), '--kinds', 'uuidv9'], /unknown kind "uuidv9"/],
    [['bench', 'pk', '--db', 'ftp://example.org/x'], /--db: unsupported or malformed URL/],
    [['bench', 'pk', '--db', db(), '--chart', 'out.png'], /--chart writes SVG/],
    [['bench', 'pk', '--db', POSTGRES_URL, '--scratch', 'Robert"); DROP'], /--scratch must be a lowercase identifier/],
    [['bench', 'pk', '--db', 'sqlite:'], /needs the path of a new file/],
  ])('%j exits 2 with a message', (args, message) => {
    const r = sequoia(args);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });

  it('an unreachable database exits 1 with STORE_UNAVAILABLE', () => {
    const r = sequoia(['bench', 'pk', '--db', 'postgres://postgres@127.0.0.1:1/test', '--rows', '10']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/STORE_UNAVAILABLE/);
  });

  it('--drop-leftover with nothing left exits 2', () => {
    const r = sequoia(['bench', 'pk', '--db', db(), '--drop-leftover']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/does not exist: nothing to drop/);
  });
});

describe('sequoia bench pk on SQLite', () => {
  it('--json and --chart: every kind reported, an SVG written, no progress bar off a terminal, the file gone', () => {
    const dir = tmp();
    const file = join(dir, 'b.db');
    const chart = join(dir, 'pk.svg');
    const r = sequoia([
      'bench',
      'pk',
      '--db',
      `sqlite:${file}`,
      '--rows',
      '200',
      '--warmup',
      '20',
      '--batch',
      '10',
      '--json',
      '--chart',
      chart,
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as {
      db: string;
      target: { engine: string };
      results: { kind: string; rows: number; vsBaseline: { time: number } }[];
    };
    expect(out.target.engine).toBe('sqlite');
    expect(out.results.map((x) => x.kind)).toEqual(['sequence', 'segment', 'snowflake', 'uuidv7', 'uuidv4', 'uuidv4-text', 'ulid']);
    expect(out.results.every((x) => x.rows === 200)).toBe(true);
    expect(out.results[0]!.vsBaseline.time).toBe(1);
    const svg = readFileSync(chart, 'utf8');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    for (const k of out.results) expect(svg).toContain(`>${k.kind}</text>`);
    expect(existsSync(file)).toBe(false);
  });

  it('the text table names every kind and its ratio to the baseline', () => {
    const r = sequoia(['bench', 'pk', '--db', `sqlite:${join(tmp(), 'b.db')}`, '--rows', '50', '--warmup', '0', '--kinds', 'uuidv7,ulid']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^sequence\s+INTEGER\s+[\d,]+\s+1\.00×/m);
    expect(r.stdout).toMatch(/^uuidv7\s+BLOB/m);
    expect(r.stdout).toMatch(/^ulid\s+TEXT/m);
    expect(r.stdout).not.toMatch(/^segment/m);
  });
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('sequoia bench pk: what it did not create', () => {
  it('a schema of the same name without the marker: refused with exit 2, left with its data', async () => {
    const scratch = uniqueName('sq_pk_cli');
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA "${scratch}"`);
      await admin.query(`CREATE TABLE "${scratch}".pk_uuidv4 AS SELECT 42 AS id`);
      const r = sequoia(['bench', 'pk', '--db', POSTGRES_URL, '--scratch', scratch, '--rows', '10']);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`schema ${scratch} exists and was not created by \`sequoia bench pk\``));
      const d = sequoia(['bench', 'pk', '--db', POSTGRES_URL, '--scratch', scratch, '--drop-leftover']);
      expect(d.status).toBe(2);
      expect((await admin.query(`SELECT id FROM "${scratch}".pk_uuidv4`)).rows).toEqual([{ id: 42 }]);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${scratch}" CASCADE`).catch(() => {});
      await admin.end();
    }
  });
});

describePg('sequoia bench pk: Ctrl-C', () => {
  it('SIGINT during a run stops it, drops the scratch schema, and exits 130', async () => {
    const scratch = uniqueName('sq_pk_int');
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      const child = spawn(
        process.execPath,
        [BIN, 'bench', 'pk', '--db', POSTGRES_URL, '--scratch', scratch, '--rows', '1000000', '--warmup', '0', '--concurrency', '2'],
        {
          env: cleanEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // wait until rows are going in
      const deadline = Date.now() + 20_000;
      let rows = 0;
      while (Date.now() < deadline && rows === 0) {
        await new Promise((r) => setTimeout(r, 200));
        const t = await admin.query('SELECT to_regclass($1)::text AS t', [`"${scratch}".pk_sequence`]);
        if (t.rows[0].t) rows = Number((await admin.query(`SELECT count(*) AS n FROM "${scratch}".pk_sequence`)).rows[0].n);
      }
      expect(rows).toBeGreaterThan(0);
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/SIGINT: stopping/);
      expect(stderr).toMatch(/interrupted; the scratch objects are dropped/);
      expect((await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [scratch])).rowCount).toBe(0);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${scratch}" CASCADE`).catch(() => {});
      await admin.end();
    }
  });
});
