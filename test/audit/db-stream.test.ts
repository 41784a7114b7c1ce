/**
 * `sequoia audit --db` reads the business table by the database's fast path
 * (PostgreSQL: `COPY (query) TO STDOUT`, parsed as bytes like a file;
 * MySQL: the driver's row stream, rows as arrays of text) and must say
 * exactly what the same IDs say from a file: a planted duplicate, a gap, a foreign ID above the store, across
 * spilled runs. Real stores, the built command.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection } from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PACKAGED_BIN, ROOT, sequoia } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const PG_URL = process.env.SEQUOIA_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const MY_URL = 'mysql://root@127.0.0.1:3306/test';
const TABLE = `audit_stream_${process.pid}`;

let dir: string;
let store: string;
let ids: string[];
let fromFile: unknown;

function ok(r: { status: number | null; stdout: string; stderr: string }): string {
  expect(r.status, r.stderr + r.stdout).toBe(0);
  return r.stdout;
}

/** The report without its timing. */
function report(r: { status: number | null; stdout: string; stderr: string }): unknown {
  expect(r.status, r.stderr).toBe(1);
  const j = JSON.parse(r.stdout) as { summary: Record<string, unknown> };
  delete j.summary.seconds;
  return j;
}

const auditArgs = (): string[] => ['--tag', 'streamed', '--store', store, '--chunk-ids', '64', '--json'];

/**
 * The packaged bin's audit of `query`, with the CommonJS load trace: its
 * report, and the driver files loaded on the main thread and on other threads.
 */
function tracedAudit(url: string, query: string): { report: unknown; main: string[]; threads: string[] } {
  const trace = join(ROOT, 'test', 'helpers', 'load-trace', 'require-trace.mjs');
  const r = spawnSync(process.execPath, ['--import', trace, PACKAGED_BIN, 'audit', '--db', url, '--query', query, ...auditArgs()], {
    encoding: 'utf8',
  });
  return {
    report: report({ ...r, stderr: r.stderr.replace(/^LOADED .*\n/gm, '') }),
    main: [...r.stderr.matchAll(/^LOADED (\S+)$/gm)].map((m) => m[1] as string),
    threads: [...r.stderr.matchAll(/^LOADED (\S+) thread \d+$/gm)].map((m) => m[1] as string),
  };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-audit-stream-'));
  store = `sqlite:${join(dir, 'store.db')}`;
  const state = join(dir, 'state');
  ok(sequoia(['tag', 'create', 'streamed', '--step', '100', '--store', store, '--state-dir', state]));
  const issued = ok(sequoia(['gen', 'segment', '--tag', 'streamed', '--count', '300', '--store', store, '--state-dir', state]))
    .trim()
    .split('\n');
  // A gap (50 IDs never stored), a duplicate, and an ID the store never issued (above its max_id).
  const top = issued.map(BigInt).reduce((a, b) => (a > b ? a : b));
  ids = [...issued.slice(0, 100), ...issued.slice(150), issued[7] as string, String(top + 1_000_000n)];
  const file = join(dir, 'ids.txt');
  writeFileSync(file, `${ids.join('\n')}\n`);
  fromFile = report(sequoia(['audit', file, ...auditArgs()]));
  const j = fromFile as { findings: Array<{ kind: string }>; summary: { gapRate: number; spilledRuns: number } };
  expect(j.findings.map((f) => f.kind).sort()).toEqual(['above-store-max', 'duplicates', 'foreign']);
  expect(j.summary.gapRate).toBeGreaterThan(0);
  expect(j.summary.spilledRuns).toBeGreaterThan(1);
}, 120_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const describePg = await describeWithService('postgres', async () => {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.end();
});

describePg('audit --db on PostgreSQL (COPY text)', () => {
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE TABLE ${TABLE} (pk serial PRIMARY KEY, id bigint, note text)`);
    await admin.query(`INSERT INTO ${TABLE} (id, note) SELECT x, 'a\tb\\c' FROM unnest($1::bigint[]) AS x`, [ids]);
  });
  afterAll(async () => {
    await admin.query(`DROP TABLE IF EXISTS ${TABLE}`);
    await admin.end();
  });

  it('finds what the file finds: the same report, whatever columns follow the ID and with a closing semicolon', () => {
    const r = sequoia(['audit', '--db', PG_URL, '--query', `SELECT id, note, pk FROM ${TABLE} ORDER BY pk;`, ...auditArgs()]);
    expect(report(r)).toEqual(fromFile);
    const commented = sequoia(['audit', '--db', PG_URL, '--query', `SELECT id FROM ${TABLE} -- the orders`, ...auditArgs()]);
    expect(report(commented)).toEqual(fromFile);
  });

  // The driver's share of the read (socket reads, message frames) runs beside the parse and sort, not between them.
  it('the COPY is received on a thread of its own: the main thread loads no PostgreSQL driver, and the report is the same', () => {
    const r = tracedAudit(PG_URL, `SELECT id FROM ${TABLE} ORDER BY pk`);
    expect(r.report).toEqual(fromFile);
    const driver = /node_modules\/(pg|pg-copy-streams|pg-protocol)\//;
    expect(r.threads.filter((m) => driver.test(m)).length).toBeGreaterThan(0);
    expect(r.main.filter((m) => driver.test(m))).toEqual([]);
  });

  it('a notice between two rows, or an error after some, is read as the server meant it', async () => {
    await admin.query(
      `CREATE FUNCTION ${TABLE}_f(x bigint) RETURNS bigint AS $$ BEGIN IF x = 1000 THEN RAISE NOTICE 'half way'; END IF; IF x = 2999 THEN RETURN x - 1; END IF; RETURN x; END $$ LANGUAGE plpgsql`,
    );
    try {
      const r = sequoia([
        'audit',
        '--db',
        PG_URL,
        '--query',
        `SELECT ${TABLE}_f(x) FROM generate_series(1, 3000) AS x`,
        '--layout',
        'twitter',
        '--json',
      ]);
      const j = report(r) as { summary: { count: number; distinct: number }; findings: Array<{ kind: string; count: number }> };
      expect(j.summary).toMatchObject({ count: 3000, distinct: 2999 });
      expect(j.findings.find((f) => f.kind === 'duplicates')?.count).toBe(1);
    } finally {
      await admin.query(`DROP FUNCTION ${TABLE}_f(bigint)`);
    }
    const e = sequoia([
      'audit',
      '--db',
      PG_URL,
      '--query',
      'SELECT CASE WHEN x < 80000 THEN x ELSE 1 / (x - x) END FROM generate_series(1, 100000) AS x',
      ...auditArgs(),
    ]);
    expect(e.status).toBe(2);
    expect(e.stderr).toContain('division by zero');
  });

  it('a NULL, an empty or a non-numeric value stops the read with exit 2, naming the row', async () => {
    await admin.query(`INSERT INTO ${TABLE} (id) VALUES (NULL)`);
    const r = sequoia(['audit', '--db', PG_URL, '--query', `SELECT id FROM ${TABLE} ORDER BY pk`, ...auditArgs()]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`row ${ids.length + 1}: not an ID from 0 to 2^63-1: NULL`);
    for (const bad of ["SELECT ''::text", "SELECT '12a'::text", 'SELECT -5::bigint', 'SELECT 9223372036854775808::numeric']) {
      const b = sequoia(['audit', '--db', PG_URL, '--query', bad, ...auditArgs()]);
      expect(b.status, bad).toBe(2);
      expect(b.stderr, bad).toContain('row 1: not an ID from 0 to 2^63-1');
    }
  });

  it('a bad row early in a very long COPY stops the read there: the server is not read to the end', async () => {
    // Two billion rows: read to the end, this would run for hours; stopped at row 2, it exits at once.
    const endless = 'SELECT CASE WHEN g = 2 THEN NULL ELSE g END FROM (SELECT generate_series(1, 2000000000) AS g) s';
    const r = sequoia(['audit', '--db', PG_URL, '--query', endless, ...auditArgs()]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('row 2: not an ID from 0 to 2^63-1: NULL');
    // The connection was dropped: its backend stops at its next send instead of producing the rest.
    const running = async () =>
      Number(
        (
          await admin.query(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE '%generate_series(1, 2000000000)%' AND pid <> pg_backend_pid()`,
          )
        ).rows[0].n,
      );
    for (let i = 0; i < 200 && (await running()) > 0; i++) await new Promise((w) => setTimeout(w, 50));
    expect(await running()).toBe(0);
  });
});

const describeMy = await describeWithService('mariadb', async () => {
  const { default: mysql } = await import('mysql2/promise');
  const c = await mysql.createConnection({ uri: MY_URL });
  await c.end();
});

describeMy('audit --db on MariaDB (row stream)', () => {
  let c: Connection;
  beforeAll(async () => {
    const { default: mysql } = await import('mysql2/promise');
    c = await mysql.createConnection({ uri: MY_URL });
    await c.query(`CREATE TABLE ${TABLE} (pk INT AUTO_INCREMENT PRIMARY KEY, id BIGINT, note TEXT)`);
    await c.query(`INSERT INTO ${TABLE} (id, note) VALUES ${ids.map(() => "(?, 'a\tb')").join(',')}`, ids);
    await c.query(`CREATE PROCEDURE ${TABLE}_ids() SELECT id FROM ${TABLE} ORDER BY pk`);
  });
  afterAll(async () => {
    await c.query(`DROP PROCEDURE IF EXISTS ${TABLE}_ids`);
    await c.query(`DROP TABLE IF EXISTS ${TABLE}`);
    await c.end();
  });

  it('finds what the file finds: the same report, whatever columns follow the ID', () => {
    const r = sequoia(['audit', '--db', MY_URL, '--query', `SELECT id, note, pk FROM ${TABLE} ORDER BY pk`, ...auditArgs()]);
    expect(report(r)).toEqual(fromFile);
  });

  it("a stored procedure's rows are the IDs: the CALL's closing status is no row", () => {
    const r = sequoia(['audit', '--db', MY_URL, '--query', `CALL ${TABLE}_ids()`, ...auditArgs()]);
    expect(report(r)).toEqual(fromFile);
  });

  it('a statement that returns no rows reads 0 IDs, not a NULL row', () => {
    const r = sequoia(['audit', '--db', MY_URL, '--query', 'DO 1', ...auditArgs()]);
    expect(r.status).toBe(2);
    expect(r.stderr).not.toContain('NULL');
    expect(r.stderr).toContain('0 IDs');
  });

  it('a NULL, an empty, a negative or a too large value stops the read with exit 2, naming the row', async () => {
    await c.query(`INSERT INTO ${TABLE} (id) VALUES (NULL)`);
    try {
      const r = sequoia(['audit', '--db', MY_URL, '--query', `SELECT id FROM ${TABLE} ORDER BY pk`, ...auditArgs()]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`row ${ids.length + 1}: not an ID from 0 to 2^63-1: NULL`);
    } finally {
      await c.query(`DELETE FROM ${TABLE} WHERE id IS NULL`);
    }
    const bad: Array<[string, string]> = [
      ["SELECT ''", '""'],
      ["SELECT '12a'", '"12a"'],
      ['SELECT -5', '"-5"'],
      ['SELECT 9223372036854775808', '"9223372036854775808"'],
      [`SELECT REPEAT('7', 300)`, `"${'7'.repeat(40)}"`],
    ];
    for (const [q, shown] of bad) {
      const b = sequoia(['audit', '--db', MY_URL, '--query', q, ...auditArgs()]);
      expect(b.status, q).toBe(2);
      expect(b.stderr, q).toContain(`row 1: not an ID from 0 to 2^63-1: ${shown}`);
    }
  });
});
