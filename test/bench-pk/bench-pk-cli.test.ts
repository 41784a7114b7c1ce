/**
 * `sequoia bench pk` as users run it (the built command): bad input exits 2
 * with a message, a run on SQLite prints JSON and writes an SVG and leaves no
 * file behind, a progress bar is drawn on a terminal (and only there), and
 * Ctrl-C (SIGINT) during a run on SQLite, PostgreSQL or MariaDB stops it,
 * drops the scratch object before the command exits, and exits 130.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { BIN, cleanEnv, sequoia } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from '../contract/backends.js';

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

/** Runs the command on a pseudo-terminal (util-linux `script`), as a user at a terminal does: stdout and stderr both the terminal. */
function onTerminal(args: string[]): { status: number | null; output: string } {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const r = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', env: cleanEnv(), timeout: 60_000 });
  if (r.error) throw r.error;
  return { status: r.status, output: r.stdout };
}

describe('sequoia bench pk: the progress bar', () => {
  const args = (file: string) => [
    'bench',
    'pk',
    '--db',
    `sqlite:${file}`,
    '--rows',
    '2000',
    '--warmup',
    '100',
    '--batch',
    '10',
    '--kinds',
    'uuidv7',
  ];

  it('on a terminal, a bar on one line counts the rows up to all of them, then is cleared before the report', () => {
    const file = join(tmp(), 'b.db');
    const r = onTerminal(args(file));
    expect(r.status, r.output).toBe(0);
    // the terminal's "erase to the end of the line", made readable
    const out = r.output.replaceAll('\u001b[K', '<EL>');
    // 2 kinds × (100 warm-up + 2,000 measured) rows
    const draws = [...out.matchAll(/\r\[([#.]{30})\] +(\d+)% +([\d,]+)\/4,200 rows +(warm-up|measure|sizes) (sequence|uuidv7)<EL>/g)];
    expect(draws.length, JSON.stringify(out)).toBeGreaterThanOrEqual(2);
    const counts = draws.map((d) => Number(d[3]!.replace(/,/g, '')));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(draws[0]![4]).toBe('warm-up');
    const last = draws.at(-1)!;
    expect([last[1], last[2], counts.at(-1)]).toEqual(['#'.repeat(30), '100', 4200]);
    // cleared before the report, which starts on a clean line
    expect(out.slice(last.index + last[0].length)).toMatch(/^\r<EL>[^<]*^sequence\s+INTEGER/m);
    expect(existsSync(file)).toBe(false);
  });

  it('--no-progress draws none, on a terminal too', () => {
    const r = onTerminal([...args(join(tmp(), 'b.db')), '--no-progress']);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toMatch(/^uuidv7\s+BLOB/m);
    expect(r.output).not.toMatch(/\[[#.]{30}\]/);
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

/**
 * Starts a long run, waits until `rowsGoingIn` says rows are being inserted, sends SIGINT, and answers
 * the exit code (killing the command if it does not exit within 20 s of the signal) and its stderr.
 */
async function interruptRun(args: string[], rowsGoingIn: () => Promise<boolean>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'bench', 'pk', '--rows', '20000000', '--warmup', '0', '--slices', '1000', ...args], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 20_000;
    let going = false;
    while (Date.now() < deadline && !going && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 200));
      going = await rowsGoingIn();
    }
    expect(going, stderr).toBe(true);
    child.kill('SIGINT');
    const timeout = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000));
    const code = await Promise.race([exited, timeout]);
    expect(code, 'exit after SIGINT').not.toBe('still running');
    return { code: code as number | null, stderr };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function expectInterrupted(r: { code: number | null; stderr: string }): void {
  expect(r.code).toBe(130);
  expect(r.stderr).toMatch(/SIGINT: stopping/);
  expect(r.stderr).toMatch(/interrupted; the scratch objects are dropped/);
}

describe('sequoia bench pk: Ctrl-C on SQLite', () => {
  it('SIGINT during a run stops it at once (the synchronous driver does not hold the signal back), deletes the file, and exits 130', async () => {
    const file = join(tmp(), 'b.db');
    const walBytes = (): number => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
    const r = await interruptRun(['--db', `sqlite:${file}`], async () => walBytes() > 0);
    expectInterrupted(r);
    for (const suffix of ['', '-wal', '-shm']) expect(existsSync(`${file}${suffix}`), suffix).toBe(false);
  });
});

describePg('sequoia bench pk: Ctrl-C on PostgreSQL', () => {
  it('SIGINT during a run stops it, drops the scratch schema, and exits 130', async () => {
    const scratch = uniqueName('sq_pk_int');
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      const rowsIn = async (): Promise<boolean> => {
        const t = await admin.query('SELECT to_regclass($1)::text AS t', [`"${scratch}".pk_sequence`]);
        return t.rows[0].t !== null && Number((await admin.query(`SELECT count(*) AS n FROM "${scratch}".pk_sequence`)).rows[0].n) > 0;
      };
      expectInterrupted(await interruptRun(['--db', POSTGRES_URL, '--scratch', scratch, '--concurrency', '2'], rowsIn));
      expect((await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [scratch])).rowCount).toBe(0);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${scratch}" CASCADE`).catch(() => {});
      await admin.end();
    }
  });
});

const describeMy = await describeWithService('MariaDB', probeMysql);
describeMy('sequoia bench pk: Ctrl-C on MariaDB', () => {
  it('SIGINT during a run stops it, drops the scratch database, and exits 130', async () => {
    const scratch = uniqueName('sq_pk_int');
    const admin = await mysql.createConnection(MYSQL_URL);
    try {
      const rowsIn = async (): Promise<boolean> => {
        const [t] = await admin.query('SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [
          scratch,
          'pk_sequence',
        ]);
        if ((t as unknown[]).length === 0) return false;
        const [n] = await admin.query(`SELECT COUNT(*) AS n FROM \`${scratch}\`.pk_sequence`);
        return Number((n as { n: number }[])[0]!.n) > 0;
      };
      expectInterrupted(await interruptRun(['--db', MYSQL_URL, '--scratch', scratch, '--concurrency', '2'], rowsIn));
      const [left] = await admin.query('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [scratch]);
      expect(left as unknown[]).toEqual([]);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS \`${scratch}\``).catch(() => {});
      await admin.end();
    }
  });
});
