/**
 * A PostgreSQL store (tag table and ledger) restored to a snapshot under a
 * fleet, with real servers and a business table whose rows carry their
 * creation time:
 *
 * - a server started with a fresh state dir re-issues IDs the business table
 *   already holds (their inserts fail on its primary key); the new ledger
 *   rows cover the old IDs, so only the rows' times tell: `audit
 *   --time-column created_at` reports them as `issued-before-recorded`, with
 *   the count of rows whose ID lies in a range recorded after them;
 * - the server that kept its state dir refuses the tag (its high-water mark
 *   is the end of a range of its grown dynamic step, above every ID of the
 *   table); a fence just above the table's highest ID leaves it refusing, and
 *   audit given its state dir says so (`refused-by-server-marks`) instead of
 *   "clean"; the fence audit then prints reopens it, and it issues above
 *   every ID of the table.
 *
 * And on SQLite with a planted ledger: the proposed fence clears the ledger's
 * largest range (10 × it), not 10 × the stored step; state dirs audit cannot
 * use are refused; --time-column reads SQLite text times and MariaDB
 * DATETIMEs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const PG_URL = process.env.SEQUOIA_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const describePg = await describeWithService('postgres', async () => {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.end();
});

interface Finding {
  kind: string;
  count: number;
  examples: string[];
  fence?: { to: string; command: string };
}
interface Report {
  clean: boolean;
  findings: Finding[];
}

const TAG = 'orders';
/** A small margin: the test waits (on PostgreSQL's clock) until the old rows are older than it. */
const MARGIN_MS = 1000;

describePg('audit after a PostgreSQL store was restored under running servers', () => {
  const table = `restored_alloc_${process.pid}`;
  const orders = `restored_orders_${process.pid}`;
  const store = `${PG_URL}?table=${table}`;
  let dir: string;
  let admin: pg.Client;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-restored-'));
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE TABLE ${orders} (id bigint PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
  });
  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    for (const t of [orders, table, `${table}_ledger`, `${table}_snap`, `${table}_ledger_snap`])
      await admin.query(`DROP TABLE IF EXISTS ${t}`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  });

  const ok = (r: { status: number | null; stdout: string; stderr: string }) => {
    expect(r.status, r.stderr + r.stdout).toBe(0);
    return r.stdout;
  };
  const audit = (args: string[]) => {
    const r = sequoia(['audit', '--tag', TAG, '--store', store, '--json', ...args]);
    expect([0, 1], r.stderr).toContain(r.status);
    return { status: r.status, report: JSON.parse(r.stdout) as Report };
  };
  const idsFrom = async (s: ServerProcess, count: number): Promise<{ status: number; ids: string[]; body: string }> => {
    const res = await fetch(`${s.url}/v1/segment/${TAG}?count=${count}`);
    const body = await res.text();
    return { status: res.status, ids: res.ok ? (JSON.parse(body) as { ids: string[] }).ids : [], body };
  };
  /** Writes IDs to the business table as an application does, one row each; answers the IDs its primary key refused. */
  const insert = async (ids: readonly string[]): Promise<string[]> => {
    const r = await admin.query<{ id: string }>(
      `INSERT INTO ${orders} (id) SELECT unnest($1::bigint[]) ON CONFLICT (id) DO NOTHING RETURNING id::text AS id`,
      [ids],
    );
    const written = new Set(r.rows.map((x) => x.id));
    return ids.filter((id) => !written.has(id));
  };
  const drawAndInsert = async (s: ServerProcess, total: number): Promise<{ ids: string[]; refused: string[] }> => {
    const ids: string[] = [];
    const refused: string[] = [];
    while (ids.length < total) {
      const r = await idsFrom(s, Math.min(100, total - ids.length));
      expect(r.status, r.body).toBe(200);
      // One batch at a time, as requests come: each batch is a row per ID.
      refused.push(...(await insert(r.ids)));
      ids.push(...r.ids);
    }
    return { ids, refused };
  };

  it("finds the re-issued IDs by their rows' times, says which servers still refuse, and its fence reopens them", async () => {
    ok(sequoia(['tag', 'create', TAG, '--step', '100', '--store', store]));
    const stateA = join(dir, 'state-a');
    // Its dynamic step grows to a cap (a range the trip below burns stays under its mark, as with a step that stopped doubling).
    const a = await startServe(['--store', store, '--state-dir', stateA, '--max-step', '800']);
    servers.push(a);

    // Before the snapshot; the snapshot (tag table and ledger); after it, enough for the dynamic step to grow well past 100.
    const before = await drawAndInsert(a, 300);
    await admin.query(
      `CREATE TABLE ${table}_snap AS SELECT * FROM ${table}; CREATE TABLE ${table}_ledger_snap AS SELECT * FROM ${table}_ledger`,
    );
    const after = await drawAndInsert(a, 3000);
    expect([...before.refused, ...after.refused]).toEqual([]);
    const old = [...before.ids, ...after.ids];
    const highest = old.map(BigInt).reduce((x, y) => (x > y ? x : y));

    // Every old row older than twice the margin on the store's clock before the restore (a condition, not a sleep):
    // every range recorded after it is then younger than every old row by more than the margin.
    for (;;) {
      const r = await admin.query<{ ready: boolean }>(
        `SELECT clock_timestamp() > max(created_at) + make_interval(secs => $1::float8 / 1000) AS ready FROM ${orders}`,
        [MARGIN_MS * 2],
      );
      if (r.rows[0]!.ready) break;
      await admin.query('SELECT pg_sleep(0.05)');
    }
    // The restore: both tables back to the snapshot.
    await admin.query(
      `BEGIN; DELETE FROM ${table}; INSERT INTO ${table} SELECT * FROM ${table}_snap; ` +
        `DELETE FROM ${table}_ledger; INSERT INTO ${table}_ledger SELECT * FROM ${table}_ledger_snap; COMMIT`,
    );
    const snapRows = (await admin.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}_ledger_snap`)).rows[0]!.n;

    // A kept its marks: it refuses once its buffer is spent (those IDs never reached the table) and it asks the restored store.
    let refusal = '';
    for (let i = 0; i < 200 && refusal === ''; i++) {
      const r = await idsFrom(a, 1000);
      if (r.status !== 200) refusal = r.body;
    }
    expect(refusal).toMatch(/STORE_ROLLBACK_DETECTED/);

    // A server with a fresh state dir: it cannot know, and re-issues IDs the table holds.
    const b = await startServe(['--store', store, '--state-dir', join(dir, 'state-b'), '--max-step', '400']);
    servers.push(b);
    const reissued = await drawAndInsert(b, 1000);
    expect(reissued.refused.length, 'the restored store re-issued IDs the business table holds').toBeGreaterThan(0);
    b.child.kill('SIGKILL'); // its buffered IDs are re-issues too: it is stopped before the fence, as an operator would
    await b.exited;

    // The rows whose ID lies in a range recorded after the restore, counted from the ledger itself.
    const fresh = await admin.query<{ first: string; last: string }>(
      `SELECT first_id::text AS first, last_id::text AS last FROM ${table}_ledger l WHERE kind = 'allocate' ` +
        `AND NOT EXISTS (SELECT 1 FROM ${table}_ledger_snap s WHERE s.first_id = l.first_id AND s.at_ms = l.at_ms)`,
    );
    expect(fresh.rows.length).toBeGreaterThan(0);
    const inFresh = (id: string) => fresh.rows.some((r) => BigInt(r.first) <= BigInt(id) && BigInt(id) <= BigInt(r.last));
    const expected = old.filter(inFresh);
    expect(expected.length).toBeGreaterThanOrEqual(reissued.refused.length);
    expect(Number(snapRows)).toBeGreaterThan(0);

    const query = ['--db', PG_URL, '--query', `SELECT id, created_at FROM ${orders}`];
    const timed = audit([...query, '--time-column', 'created_at', '--time-margin-ms', String(MARGIN_MS)]);
    expect(timed.status).toBe(1);
    const ibr = timed.report.findings.find((f) => f.kind === 'issued-before-recorded');
    expect(ibr, JSON.stringify(timed.report.findings.map((f) => f.kind))).toBeDefined();
    expect(ibr!.count).toBe(expected.length);
    expect(ibr!.fence?.command).toMatch(/^sequoia fence orders --to \d+ --store /);
    // Each example is one of those rows (up to 1,000 are listed), and every ID the primary key refused is among them.
    const want = new Set(expected);
    expect(ibr!.examples).toHaveLength(Math.min(1000, expected.length));
    for (const e of ibr!.examples) expect(want.has(e.split(':')[0] as string), e).toBe(true);
    for (const id of reissued.refused) expect(want.has(id), id).toBe(true);
    // The column by number, and its time in seconds since 1970, say the same.
    const bySeconds = audit([
      '--db',
      PG_URL,
      '--query',
      `SELECT id, extract(epoch FROM created_at) AS t FROM ${orders}`,
      '--time-column',
      '2',
      '--time-margin-ms',
      String(MARGIN_MS),
    ]);
    expect(bySeconds.report.findings.find((f) => f.kind === 'issued-before-recorded')?.count).toBe(expected.length);

    // A fence just above the table's highest ID is below A's mark: A keeps refusing.
    // (from an operator's own state dir, as fence needs one: not A's, whose marks would refuse it)
    ok(sequoia(['fence', TAG, '--to', String(highest + 1n), '--store', store, '--state-dir', join(dir, 'operator-state')]));
    const stillRefused = await idsFrom(a, 1);
    expect(stillRefused.status, stillRefused.body).not.toBe(200);
    // Audit cannot see A's mark without its state dir (nothing in the table or the store is above the fence); given it, it names A.
    const marks = audit([...query, '--state-dir', stateA]);
    expect(marks.status).toBe(1);
    const refusing = marks.report.findings.find((f) => f.kind === 'refused-by-server-marks');
    expect(refusing, JSON.stringify(marks.report.findings)).toBeDefined();
    expect(refusing!.count).toBe(1);
    expect(refusing!.examples[0]).toContain(stateA);
    const to = BigInt(refusing!.fence!.to);
    expect(to).toBeGreaterThan(highest);
    const words = [...refusing!.fence!.command.matchAll(/'([^']*)'|(\S+)/g)].map((m) => (m[1] ?? m[2]) as string);
    expect(words).toEqual(['sequoia', 'fence', TAG, '--to', String(to), '--store', store, '--state-dir', stateA]);

    // Followed as printed: A issues again (it re-reads the fence epoch while refused), above every ID in the table.
    ok(sequoia(words.slice(1)));
    let reopened: string[] = [];
    for (let i = 0; i < 400 && reopened.length === 0; i++) {
      const r = await idsFrom(a, 5);
      if (r.status === 200) reopened = r.ids;
      else await admin.query('SELECT pg_sleep(0.05)');
    }
    expect(reopened).toHaveLength(5);
    const top = (await admin.query<{ m: string }>(`SELECT max(id)::text AS m FROM ${orders}`)).rows[0]!.m;
    for (const id of reopened) expect(BigInt(id)).toBeGreaterThan(BigInt(top));
    expect(await insert(reopened)).toEqual([]);
    const afterFence = audit([...query, '--state-dir', stateA]);
    expect(afterFence.report.findings.map((f) => f.kind)).not.toContain('refused-by-server-marks');
  }, 240_000);
});

describe('the fence audit proposes after a restore (SQLite store, the ledger planted)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-restored-sqlite-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("clears the ledger's highest end plus 10 × its largest range, not 10 × the stored step; a state dir it cannot use exits 2", async () => {
    const file = join(dir, 'store.db');
    const store = `sqlite:${file}`;
    expect(sequoia(['tag', 'create', TAG, '--step', '100', '--store', store]).status).toBe(0);
    // A dynamic step that grew to 6,400: the ledger's rows, and max_id set back below them (the restore).
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file);
    const { generation } = db.prepare('SELECT generation FROM sequoia_alloc WHERE tag = ?').get(TAG) as { generation: number };
    const row = db.prepare(
      "INSERT INTO sequoia_ledger (tag, kind, first_id, last_id, stride, step, host, pid, instance, version, at_ms, fence_epoch, generation) VALUES (?, 'allocate', ?, ?, 1, ?, 'h', 1, 'i', 'v', ?, 0, ?)",
    );
    row.run(TAG, 1, 100, 100, Date.now(), generation);
    row.run(TAG, 101, 6500, 6400, Date.now(), generation);
    db.prepare('UPDATE sequoia_alloc SET max_id = 101 WHERE tag = ?').run(TAG);
    db.close();
    const ids = join(dir, 'ids.txt');
    writeFileSync(ids, ['1', '2', '150'].join('\n'));
    const r = sequoia(['audit', ids, '--tag', TAG, '--store', store, '--json']);
    expect(r.status, r.stderr).toBe(1);
    const above = (JSON.parse(r.stdout) as Report).findings.find((f) => f.kind === 'above-store-max');
    // max(highest ID 150, ledger's end 6,500) + 1 + 10 × 6,400 (the old advice: 150 + 1 + 10 × 100 = 1,151).
    expect(above?.fence?.to).toBe('70501');
    // Without a state dir, it says which servers would still refuse and how to have them covered.
    const text = sequoia(['audit', ids, '--tag', TAG, '--store', store]);
    expect(text.stdout).toMatch(/clears marks up to 70501; give audit each server's --state-dir to check theirs/);
    // `--fence-margin` still sets the margin.
    const m = sequoia(['audit', ids, '--tag', TAG, '--store', store, '--json', '--fence-margin', '7']);
    expect((JSON.parse(m.stdout) as Report).findings.find((f) => f.kind === 'above-store-max')?.fence?.to).toBe('6508');

    // A state dir that holds nothing, and one bound to another store: refused, nothing reported.
    const empty = join(dir, 'empty-state');
    mkdirSync(empty);
    const none = sequoia(['audit', ids, '--tag', TAG, '--store', store, '--state-dir', empty]);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--state-dir: ".*empty-state" holds no server state/);
    const other = join(dir, 'other-state');
    const otherStore = `sqlite:${join(dir, 'other.db')}`;
    expect(sequoia(['tag', 'create', TAG, '--store', otherStore]).status).toBe(0);
    // A server binds its state dir to its store (gen segment only checks the binding).
    const server = await startServe(['--store', otherStore, '--state-dir', other]);
    expect((await fetch(`${server.url}/v1/segment/${TAG}`)).status).toBe(200);
    server.child.kill('SIGTERM');
    await server.exited;
    const wrong = sequoia(['audit', ids, '--tag', TAG, '--store', store, '--state-dir', other]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/--state-dir: ".*other-state" belongs to store .*other\.db, not to .*store\.db/);
    expect(wrong.stdout).toBe('');

    // --time-column on a SQLite business table: text times without a zone are UTC (CURRENT_TIMESTAMP); a NULL is not checked.
    const biz = join(dir, 'business.db');
    const bdb = new Database(biz);
    bdb.exec(
      "CREATE TABLE o (id INTEGER, t TEXT); INSERT INTO o VALUES (5, datetime('now', '-1 day')), (6, CURRENT_TIMESTAMP), (7, NULL), (200, '2020-01-02T03:04:05Z')",
    );
    bdb.close();
    const timed = sequoia([
      'audit',
      '--db',
      `sqlite:${biz}`,
      '--query',
      'SELECT id, t FROM o',
      '--time-column',
      't',
      '--tag',
      TAG,
      '--store',
      store,
      '--json',
    ]);
    expect(timed.status, timed.stderr).toBe(1);
    const tj = JSON.parse(timed.stdout) as Report & { notChecked: string[] };
    const ibr = tj.findings.find((f) => f.kind === 'issued-before-recorded');
    expect(ibr?.examples.map((e) => e.split(':')[0])).toEqual(['5', '200']);
    expect(tj.notChecked).toContain('1 rows have no time (NULL in --time-column): not checked for issued-before-recorded');
  });
});

const MY_URL = 'mysql://root@127.0.0.1:3306/test';
const describeMy = await describeWithService('mariadb', async () => {
  const { default: mysql } = await import('mysql2/promise');
  const c = await mysql.createConnection({ uri: MY_URL });
  await c.end();
});

describeMy('audit --time-column on MariaDB', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-restored-mariadb-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads DATETIME rows; a NULL is not checked; a column the query lacks exits 2', async () => {
    const { default: mysql } = await import('mysql2/promise');
    const c = await mysql.createConnection({ uri: MY_URL });
    const t = `audit_time_${process.pid}`;
    const store = `sqlite:${join(dir, 'my-time.db')}`;
    try {
      expect(sequoia(['tag', 'create', TAG, '--step', '100', '--store', store]).status).toBe(0);
      expect(
        sequoia(['gen', 'segment', '--tag', TAG, '--count', '3', '--store', store, '--state-dir', join(dir, 'my-time-state')]).status,
      ).toBe(0);
      await c.query(`CREATE TABLE ${t} (id BIGINT NOT NULL, created_at DATETIME(3) NULL)`);
      await c.query(`INSERT INTO ${t} VALUES (1, NOW(3) - INTERVAL 1 DAY), (2, NOW(3) + INTERVAL 1 MINUTE), (3, NULL)`);
      const base = ['audit', '--db', MY_URL, '--query', `SELECT id, created_at FROM ${t}`, '--tag', TAG, '--store', store];
      const r = sequoia([...base, '--time-column', 'created_at', '--json']);
      expect(r.status, r.stderr).toBe(1);
      const j = JSON.parse(r.stdout) as Report;
      expect(j.findings.map((f) => [f.kind, f.count])).toEqual([['issued-before-recorded', 1]]);
      expect(j.findings[0]!.examples[0]).toMatch(/^1: row of /);
      const missing = sequoia([...base, '--time-column', 'nope']);
      expect(missing.status).toBe(2);
      expect(missing.stderr).toMatch(/--time-column: the query selects no column "nope" after the ID \(its columns: id, created_at\)/);
    } finally {
      await c.query(`DROP TABLE IF EXISTS ${t}`);
      await c.end();
    }
  });
});
