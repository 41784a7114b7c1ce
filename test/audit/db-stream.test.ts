/**
 * `sequoia audit --db` reads the business table by the database's fast path
 * (PostgreSQL: `COPY (query) TO STDOUT`, parsed as bytes like a file;
 * MySQL: the row stream) and must say exactly what the same IDs say from a
 * file: a planted duplicate, a gap, a foreign ID above the store, across
 * spilled runs. Real stores, the built command.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sequoia } from '../helpers/cli.js';
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
});

const describeMy = await describeWithService('mariadb', async () => {
  const { default: mysql } = await import('mysql2/promise');
  const c = await mysql.createConnection({ uri: MY_URL });
  await c.end();
});

describeMy('audit --db on MariaDB (row stream)', () => {
  it('finds what the file finds: the same report', async () => {
    const { default: mysql } = await import('mysql2/promise');
    const c = await mysql.createConnection({ uri: MY_URL });
    try {
      await c.query(`CREATE TABLE ${TABLE} (pk INT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL)`);
      await c.query(`INSERT INTO ${TABLE} (id) VALUES ${ids.map(() => '(?)').join(',')}`, ids);
      const r = sequoia(['audit', '--db', MY_URL, '--query', `SELECT id FROM ${TABLE} ORDER BY pk`, ...auditArgs()]);
      expect(report(r)).toEqual(fromFile);
    } finally {
      await c.query(`DROP TABLE IF EXISTS ${TABLE}`);
      await c.end();
    }
  });
});
