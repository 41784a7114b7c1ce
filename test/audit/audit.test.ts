/**
 * `sequoia audit` as users run it (the built command, real processes), on a
 * real SQLite store and PostgreSQL: a planted duplicate; a store restored
 * from a snapshot (audit prints the fence command; after running it the
 * finding is gone and new IDs are above); snowflake IDs from the future and
 * outside their layout; the --db path; bad input exits 2.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose, getLayout } from '../../src/core/snowflake/layout.js';
import { sequoia as run } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

/**
 * Commands without --state-dir get a throw-away one, never ./data in the checkout: one per
 * store, as a state dir belongs to one store (`gen segment` and `fence` refuse another's).
 */
const defaultState = join(tmpdir(), `sequoia-audit-state-${process.pid}`);
const stateFor = (args: string[]): string => {
  const store = args.includes('--store') ? args[args.indexOf('--store') + 1] : undefined;
  return join(defaultState, store ? createHash('sha256').update(store).digest('hex').slice(0, 12) : 'default');
};
// `gen snowflake` leases its worker id from the default store: a throw-away one too.
const sequoia = (args: string[]) =>
  run(args, { SEQUOIA_STATE_DIR: stateFor(args), SEQUOIA_STORE: `sqlite:${join(defaultState, 'default-store.db')}` });

const PG_URL = process.env.SEQUOIA_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-audit-'));
  mkdirSync(defaultState, { recursive: true });
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(defaultState, { recursive: true, force: true });
});

function ok(r: { status: number | null; stdout: string; stderr: string }): string {
  expect(r.status, r.stderr + r.stdout).toBe(0);
  return r.stdout;
}

function gen(tag: string, count: number, store: string, stateDir: string): string[] {
  return ok(sequoia(['gen', 'segment', '--tag', tag, '--count', String(count), '--store', store, '--state-dir', stateDir]))
    .trim()
    .split('\n');
}

interface Json {
  clean: boolean;
  summary: {
    count: number;
    distinct: number;
    min: string;
    max: string;
    storeMaxId?: string;
    gapRate?: number;
    ledger?: { firstId: string | null; belowFirstRange: number; rows: number; peakRangesHeld: number };
    perDay?: Array<{ day: string; count: number }>;
    spilledRuns: number;
  };
  findings: Array<{ kind: string; count: number; examples: string[]; fence?: { to: string; command: string } }>;
  notChecked: string[];
}

/** Runs a printed fence command (the words after `sequoia`). */
function runPrinted(command: string): string {
  const words = command.split(' ').map((w) => w.replace(/^'(.*)'$/, '$1'));
  expect(words[0]).toBe('sequoia');
  return ok(sequoia(words.slice(1)));
}

async function storeScenario(
  store: string,
  stateDir: string,
  snapshot: () => Promise<void> | void,
  restore: () => Promise<void> | void,
  tag: string,
) {
  ok(sequoia(['tag', 'create', tag, '--step', '100', '--store', store, '--state-dir', stateDir]));
  const first = gen(tag, 150, store, stateDir);
  const file = join(dir, `${tag}-ids.txt`);

  // Clean: exit 0, a summary.
  writeFileSync(file, first.join('\n') + '\n');
  const clean = sequoia(['audit', file, '--tag', tag, '--store', store, '--state-dir', stateDir, '--json']);
  expect(clean.status, clean.stderr).toBe(0);
  const c = JSON.parse(clean.stdout) as Json;
  expect(c.clean).toBe(true);
  expect(c.summary.count).toBe(150);
  expect(c.notChecked).toEqual([]);

  // A planted duplicate: found, with its count; exit 1.
  writeFileSync(file, [...first, first[17], first[17], first[3]].join('\n') + '\n');
  const dup = sequoia(['audit', file, '--tag', tag, '--store', store, '--state-dir', stateDir]);
  expect(dup.status, dup.stderr).toBe(1);
  expect(dup.stdout).toMatch(/FINDING duplicates: 2 IDs occur more than once \(3 extra rows\)/);
  expect(dup.stdout).toContain(`${first[17]} ×3`);
  expect(dup.stdout).toContain(`${first[3]} ×2`);
  // each with the ledger entry that issued it: range, server, time, fence epoch
  const traced = dup.stdout.split('\n');
  const at = traced.indexOf(`  ${first[17]} ×3`);
  expect(at, dup.stdout).toBeGreaterThan(0);
  expect(traced[at + 1]).toMatch(
    new RegExp(
      `^ {4}issued \\[\\d+, \\d+\\] \\(\\d+ IDs\\) by \\S+ pid \\d+ instance [0-9a-f]+ v\\S+ at \\d{4}-\\d\\d-\\d\\dT[^,]+, fence epoch 0, generation \\d+$`,
    ),
  );

  // A planted foreign ID (no range covers it): found, with no ledger entry.
  const foreignId = (BigInt(first[149] as string) + 5_000_000n).toString();
  writeFileSync(file, [...first, foreignId].join('\n') + '\n');
  const fr = sequoia(['audit', file, '--tag', tag, '--store', store, '--json']);
  expect(fr.status, fr.stderr).toBe(1);
  const fj = JSON.parse(fr.stdout) as Json;
  expect(fj.findings.find((f) => f.kind === 'foreign')?.examples).toEqual([foreignId]);

  // The store is snapshotted, more IDs are issued and written, then the snapshot is restored.
  await snapshot(); // awaited: the Redis snapshot is a read (unawaited, it restored max_id "" until the store refused such a value)
  const second = gen(tag, 400, store, stateDir);
  await restore();
  const all = [...first, ...second];
  writeFileSync(file, all.join('\n') + '\n');
  // Another state directory: the restored store is what a new server would see.
  const r = sequoia(['audit', file, '--tag', tag, '--store', store, '--json']);
  expect(r.status, r.stderr).toBe(1);
  const j = JSON.parse(r.stdout) as Json;
  const above = j.findings.find((f) => f.kind === 'above-store-max');
  expect(above, r.stdout).toBeDefined();
  const highest = second.map(BigInt).reduce((a, b) => (a > b ? a : b));
  expect(BigInt(above!.fence!.to)).toBeGreaterThan(highest);
  expect(above!.fence!.command.startsWith(`sequoia fence ${tag} --to ${above!.fence!.to} --store `)).toBe(true);
  expect(above!.count).toBe(all.filter((x) => BigInt(x) >= BigInt(j.summary.storeMaxId!)).length);
  // The text form prints the same command.
  const text = sequoia(['audit', file, '--tag', tag, '--store', store]);
  expect(text.stdout).toContain(`run: ${above!.fence!.command}`);

  // Fence as printed: the audit is clean again, and new IDs are above everything issued.
  expect(runPrinted(above!.fence!.command)).toMatch(/^fenced /);
  const after = sequoia(['audit', file, '--tag', tag, '--store', store, '--json']);
  expect(after.status, after.stdout).toBe(0);
  const fresh = gen(tag, 5, store, join(dir, `${tag}-fresh-state`)).map(BigInt);
  for (const id of fresh) expect(id).toBeGreaterThan(highest);
}

describe('sequoia audit on SQLite', () => {
  it('finds a planted duplicate and a restored store; the printed fence makes it clean', async () => {
    const db = join(dir, 'store.db');
    const store = `sqlite:${db}`;
    const state = join(dir, 'state');
    const snap = join(dir, 'store.snapshot.db');
    await storeScenario(
      store,
      state,
      () => {
        ok(sequoia(['tag', 'list', '--store', store])); // the store is closed between commands: a file copy is a snapshot
        copyFileSync(db, snap);
      },
      () => {
        rmSync(`${db}-wal`, { force: true });
        rmSync(`${db}-shm`, { force: true });
        copyFileSync(snap, db);
      },
      'orders',
    );
  });

  it('reads a CSV column by name or number, and stdin; bad input exits 2', () => {
    const store = `sqlite:${join(dir, 'csv.db')}`;
    const state = join(dir, 'csv-state');
    ok(sequoia(['tag', 'create', 'inv', '--store', store, '--state-dir', state]));
    const ids = gen('inv', 20, store, state);
    const csv = join(dir, 'ids.csv');
    writeFileSync(csv, 'name,id,amount\n' + ids.map((id, i) => `"n${i}",${id},${i}.5`).join('\r\n') + '\r\n' + `dup,${ids[0]},1\n`);
    for (const col of ['id', '2']) {
      const r = sequoia(['audit', csv, '--csv-column', col, '--tag', 'inv', '--store', store, '--json']);
      expect(r.status, r.stderr).toBe(1);
      const j = JSON.parse(r.stdout) as Json;
      expect(j.summary.count).toBe(21);
      expect(j.findings.map((f) => f.kind)).toEqual(['duplicates']);
    }
    const bad = join(dir, 'bad.txt');
    writeFileSync(bad, `${ids[0]}\nabc\n`);
    const b = sequoia(['audit', bad, '--tag', 'inv', '--store', store]);
    expect(b.status).toBe(2);
    expect(b.stderr).toMatch(/line 2: not an ID/);
    expect(sequoia(['audit', bad]).status).toBe(2);
    expect(sequoia(['audit', csv, '--csv-column', 'nope', '--tag', 'inv', '--store', store]).stderr).toMatch(/no column "nope"/);
    const huge = join(dir, 'huge.txt');
    writeFileSync(huge, '9223372036854775808\n');
    expect(sequoia(['audit', huge, '--tag', 'inv', '--store', store]).status).toBe(2);
  });

  it('spills sorted runs and merges them (small chunks), with the same answer', () => {
    const f = join(dir, 'many.txt');
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++) lines.push(String(((i * 7919) % 5000) + 1));
    lines.push('4242', '17');
    writeFileSync(f, lines.join('\n'));
    const store = `sqlite:${join(dir, 'many.db')}`;
    ok(sequoia(['tag', 'create', 'many', '--start', '100000', '--store', store, '--state-dir', join(dir, 'many-state')]));
    const r = sequoia(['audit', f, '--tag', 'many', '--store', store, '--json', '--chunk-ids', '300']);
    const j = JSON.parse(r.stdout) as Json;
    expect(j.summary.spilledRuns).toBeGreaterThan(10);
    expect(j.summary).toMatchObject({ count: 5002, distinct: 5000, min: '1', max: '5000', gapRate: 0 });
    expect(j.findings[0]!.examples).toEqual(['17 ×2', '4242 ×2']);
  });

  it('reads a ledger of 12,000 ranges a page at a time and holds it as one range; a lost row is a hole of foreign IDs', async () => {
    const file = join(dir, 'ranges.db');
    const tag = 'ranges';
    ok(sequoia(['tag', 'create', tag, '--step', '10', '--store', `sqlite:${file}`, '--state-dir', join(dir, 'ranges-state')]));
    // The rows 12,000 loads of 10 would leave (written in one transaction: 12,000 loads take minutes on a busy machine).
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file);
    const { generation } = db.prepare('SELECT generation FROM sequoia_alloc WHERE tag = ?').get(tag) as { generation: number };
    const row = db.prepare(
      "INSERT INTO sequoia_ledger (tag, kind, first_id, last_id, stride, step, host, pid, instance, version, at_ms, fence_epoch, generation) VALUES (?, 'allocate', ?, ?, 1, 10, 'bench', 1, 'i', 'v', ?, 0, ?)",
    );
    db.transaction(() => {
      for (let i = 0; i < 12_000; i++) row.run(tag, 1 + 10 * i, 10 + 10 * i, Date.now(), generation);
      db.prepare('UPDATE sequoia_alloc SET max_id = 120001 WHERE tag = ?').run(tag);
    })();
    db.close();
    // One ID of each range, in a random order.
    const ids = Array.from({ length: 12_000 }, (_, i) => 1 + 10 * i + (i % 10)).sort(() => Math.random() - 0.5);
    const f = join(dir, 'ranges-ids.txt');
    writeFileSync(f, ids.join('\n'));
    const audit = () => JSON.parse(sequoia(['audit', f, '--tag', tag, '--store', `sqlite:${file}`, '--json']).stdout) as Json;
    const clean = audit();
    expect(clean.clean).toBe(true);
    expect(clean.summary.ledger).toEqual({ firstId: '1', belowFirstRange: 0, rows: 12_000, peakRangesHeld: 1 });
    // The row of the range [50001, 50010] lost: its ID is foreign, and the hole is the one more range held.
    const db2 = new Database(file);
    db2.prepare("DELETE FROM sequoia_ledger WHERE tag = ? AND first_id = 50001 AND kind = 'allocate'").run(tag);
    db2.close();
    const holed = audit();
    expect(holed.findings.map((x) => [x.kind, x.count, x.examples])).toEqual([['foreign', 1, ['50001']]]);
    expect(holed.summary.ledger).toMatchObject({ rows: 11_999, peakRangesHeld: 2 });
  }, 120_000);
});

describe('sequoia audit --layout (snowflake)', () => {
  it('counts per day, finds IDs from the future; says the worker check needs a ledger', () => {
    const leaf = getLayout('leaf');
    const ids = ok(sequoia(['gen', 'snowflake', '--layout', 'leaf', '--count', '50']))
      .trim()
      .split('\n');
    const day = new Date('2025-03-04T05:06:07Z').getTime();
    const old = compose(leaf, (day - leaf.epochMs) / leaf.unitMs, { workerId: 3, sequence: 1 });
    const future = compose(leaf, Math.floor((Date.now() + 3_600_000 - leaf.epochMs) / leaf.unitMs), { workerId: 3, sequence: 0 });
    // leaf fills all 63 bits (41 time bits), so no ID is outside it: the largest is from the far future.
    const outside = (1n << 63n) - 1n;
    const f = join(dir, 'flakes.txt');
    writeFileSync(f, [...ids, String(old), String(future), String(outside)].join('\n') + '\n');
    const r = sequoia(['audit', f, '--layout', 'leaf', '--json']);
    expect(r.status, r.stderr).toBe(1);
    const j = JSON.parse(r.stdout) as Json;
    expect(j.findings.map((x) => x.kind)).toEqual(['future']);
    expect(j.findings.find((x) => x.kind === 'future')!.examples).toEqual([String(future), String(outside)]);
    expect(j.summary.perDay).toContainEqual({ day: '2025-03-04', count: 1 });
    expect(j.summary.perDay!.find((d) => d.day === new Date().toISOString().slice(0, 10))!.count).toBeGreaterThanOrEqual(50);
    expect(j.summary.perDay!.reduce((a, d) => a + d.count, 0)).toBe(53);
    expect(j.notChecked.join(' ')).toMatch(/worker ids are not checked/);
    // Clean input: exit 0.
    writeFileSync(f, ids.join('\n'));
    expect(sequoia(['audit', f, '--layout', 'leaf']).status).toBe(0);
  });
});

const describePg = await describeWithService('postgres', async () => {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.end();
});

describePg('sequoia audit on PostgreSQL (store and --db)', () => {
  const t1 = `audit_store_${process.pid}`;
  const t2 = `audit_db_${process.pid}`;
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
  });
  afterAll(async () => {
    for (const t of [t1, t2, `${t1}_snap`, `${t2}_snap`, `${t2}_orders`, `${t1}_ledger`, `${t2}_ledger`])
      await admin.query(`DROP TABLE IF EXISTS ${t}`);
    await admin.end();
  });
  const snapshot = (t: string) => async () => {
    await admin.query(`DROP TABLE IF EXISTS ${t}_snap; CREATE TABLE ${t}_snap AS SELECT * FROM ${t}`);
  };
  const restore = (t: string) => async () => {
    await admin.query(`BEGIN; DELETE FROM ${t}; INSERT INTO ${t} SELECT * FROM ${t}_snap; COMMIT`);
  };

  it('finds a planted duplicate and a restored store on a PostgreSQL store; the printed fence makes it clean', async () => {
    await storeScenario(`${PG_URL}?table=${t1}`, join(dir, 'pg-state'), snapshot(t1), restore(t1), 'pgorders');
  });

  it('--db streams a query; finds the planted duplicate and the restored store', async () => {
    const tag = 'pgdb';
    const store = `${PG_URL}?table=${t2}`;
    const state = join(dir, 'pg-state-2');
    ok(sequoia(['tag', 'create', tag, '--step', '100', '--store', store, '--state-dir', state]));
    const first = gen(tag, 120, store, state);
    await snapshot(t2)();
    const second = gen(tag, 300, store, state);
    await restore(t2)();
    const orders = `${t2}_orders`;
    await admin.query(`CREATE TABLE ${orders} (pk serial PRIMARY KEY, id bigint NOT NULL)`);
    const rows = [...first, ...second, first[5]!];
    await admin.query(`INSERT INTO ${orders} (id) SELECT unnest($1::bigint[])`, [rows]);
    const query = `SELECT id FROM ${orders}`;
    const r = sequoia(['audit', '--db', PG_URL, '--query', query, '--tag', tag, '--store', store, '--json']);
    expect(r.status, r.stderr).toBe(1);
    const j = JSON.parse(r.stdout) as Json;
    expect(j.summary.count).toBe(rows.length);
    expect(j.findings.find((f) => f.kind === 'duplicates')!.examples).toEqual([`${first[5]} ×2`]);
    const above = j.findings.find((f) => f.kind === 'above-store-max')!;
    expect(above).toBeDefined();
    runPrinted(above.fence!.command);
    // The duplicate row fixed in the business table: the audit is clean.
    await admin.query(`DELETE FROM ${orders} WHERE pk = (SELECT max(pk) FROM ${orders})`);
    const after = sequoia(['audit', '--db', PG_URL, '--query', query, '--tag', tag, '--store', store]);
    expect(after.status, after.stdout + after.stderr).toBe(0);
    const highest = second.map(BigInt).reduce((a, b) => (a > b ? a : b));
    for (const id of gen(tag, 3, store, join(dir, 'pg-fresh')).map(BigInt)) expect(id).toBeGreaterThan(highest);
    // A query that fails, and a NULL: exit 2.
    expect(sequoia(['audit', '--db', PG_URL, '--query', 'SELECT id FROM no_such_table', '--tag', tag, '--store', store]).status).toBe(2);
    expect(sequoia(['audit', '--db', PG_URL, '--query', 'SELECT NULL::bigint', '--tag', tag, '--store', store]).status).toBe(2);
  });
});

const MY_URL = 'mysql://root@127.0.0.1:3306/test';
const describeMy = await describeWithService('mariadb', async () => {
  const { default: mysql } = await import('mysql2/promise');
  const c = await mysql.createConnection({ uri: MY_URL });
  await c.end();
});

describeMy('sequoia audit on a MariaDB store', () => {
  it('finds a planted duplicate, a foreign ID and a restored store; the printed fence makes it clean', async () => {
    const { default: mysql } = await import('mysql2/promise');
    const c = await mysql.createConnection({ uri: MY_URL, multipleStatements: true });
    const t = `audit_my_${process.pid}`;
    try {
      await storeScenario(
        `${MY_URL}?table=${t}`,
        join(dir, 'my-state'),
        async () => {
          await c.query(`DROP TABLE IF EXISTS ${t}_snap; CREATE TABLE ${t}_snap AS SELECT * FROM ${t}`);
        },
        async () => {
          await c.query(`DELETE FROM ${t}; INSERT INTO ${t} SELECT * FROM ${t}_snap`);
        },
        'myorders',
      );
    } finally {
      await c.query(`DROP TABLE IF EXISTS ${t}, ${t}_snap, ${t}_ledger`);
      await c.end();
    }
  });
});

const REDIS_URL = 'redis://127.0.0.1:6379';
const describeRedis = await describeWithService('redis', async () => {
  const { Redis } = await import('ioredis');
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await r.connect();
    await r.ping();
  } finally {
    r.disconnect();
  }
});

describeRedis('sequoia audit on a Redis store', () => {
  it('finds a planted duplicate, a foreign ID and a restored store; the printed fence makes it clean', async () => {
    const { Redis } = await import('ioredis');
    const admin = new Redis(REDIS_URL);
    const ns = `audit-${process.pid}-${Date.now()}`;
    const store = `${REDIS_URL}?keyPrefix=${ns}:tag:&tagsKey=${ns}:tags&ledgerPrefix=${ns}:ledger:`;
    let snap = '';
    try {
      await storeScenario(
        store,
        join(dir, 'redis-state'),
        async () => {
          snap = (await admin.hget(`${ns}:tag:rdorders`, 'max_id')) as string;
        },
        async () => {
          await admin.hset(`${ns}:tag:rdorders`, 'max_id', snap);
        },
        'rdorders',
      );
    } finally {
      const keys = await admin.keys(`${ns}:*`);
      if (keys.length > 0) await admin.del(...keys);
      admin.disconnect();
    }
  });
});

describeMy('sequoia audit --db on MariaDB (mysql2 row stream) and SQLite', () => {
  it('finds a planted duplicate among snowflake IDs above 2^53 (no rounding)', async () => {
    const { default: mysql } = await import('mysql2/promise');
    const c = await mysql.createConnection({ uri: MY_URL });
    const table = `audit_flakes_${process.pid}`;
    try {
      await c.query(`CREATE TABLE ${table} (pk INT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL)`);
      const ids = ok(sequoia(['gen', 'snowflake', '--layout', 'twitter', '--count', '200']))
        .trim()
        .split('\n');
      // Two IDs that differ by one above 2^53 (the highest and one above it): a driver that rounds would merge them into a false duplicate.
      const big = ids.map(BigInt).reduce((a, b) => (a > b ? a : b));
      const rows = [...ids, ids[7] as string, String(big + 1n)];
      await c.query(`INSERT INTO ${table} (id) VALUES ${rows.map(() => '(?)').join(',')}`, rows);
      const r = sequoia(['audit', '--db', MY_URL, '--query', `SELECT id FROM ${table}`, '--layout', 'twitter', '--json']);
      expect(r.status, r.stderr).toBe(1);
      const j = JSON.parse(r.stdout) as Json;
      expect(j.summary.count).toBe(rows.length);
      expect(j.findings).toHaveLength(1);
      expect(j.findings[0]!.examples).toEqual([`${ids[7]} ×2`]);

      // The same rows from a SQLite file.
      const { default: Database } = await import('better-sqlite3');
      const file = join(dir, 'business.db');
      const db = new Database(file);
      db.exec('CREATE TABLE orders (id INTEGER NOT NULL)');
      const ins = db.prepare('INSERT INTO orders VALUES (?)');
      for (const x of rows) ins.run(BigInt(x));
      db.close();
      const s = sequoia(['audit', '--db', `sqlite:${file}`, '--query', 'SELECT id FROM orders', '--layout', 'twitter', '--json']);
      expect(s.status, s.stderr).toBe(1);
      expect((JSON.parse(s.stdout) as Json).findings[0]!.examples).toEqual([`${ids[7]} ×2`]);
    } finally {
      await c.query(`DROP TABLE IF EXISTS ${table}`);
      await c.end();
    }
  });
});
