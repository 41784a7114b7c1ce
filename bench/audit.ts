/**
 * `npm run bench -- audit`: `sequoia audit` on N shuffled IDs
 * (BENCH_AUDIT_IDS, default 10,000,000) with one planted duplicate, from a
 * file and from a PostgreSQL table (`--db … --query`), run as users run it
 * (the built command, a child process): wall time, IDs/s, and the child's
 * peak RSS (GNU time's %M) and CPU seconds (user + system, %U %S). Beside
 * each database, what it takes to send the same query's rows with nothing
 * parsed: `psql -c "\copy (query) to /dev/null"`, and for MySQL/MariaDB the
 * `mariadb --batch --skip-column-names -e query` client writing to /dev/null.
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Connection } from 'mysql2/promise';

const BIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface AuditBenchResult {
  readonly ids: number;
  readonly seconds: number;
  readonly idsPerSecond: number;
  readonly peakRssMiB: number | undefined;
  /** User + system CPU seconds of the child (GNU time), undefined without it. */
  readonly cpuSeconds: number | undefined;
  readonly spilledRuns: number;
  readonly duplicatesFound: number;
}

async function writeIds(path: string, n: number): Promise<void> {
  const out = createWriteStream(path);
  // A fixed permutation of 1..n (multiplicative step coprime with n), plus one duplicate.
  let step = 7_919;
  while (gcd(step, n) !== 1) step += 2;
  let buf = '';
  for (let i = 0; i < n; i++) {
    buf += `${1_000_000_000_000 + ((i * step) % n)}\n`;
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
      buf = '';
    }
  }
  buf += `${1_000_000_000_000 + 42}\n`;
  out.end(buf);
  await new Promise<void>((r) => out.once('finish', () => r()));
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

export async function benchAudit(n = Number(process.env.BENCH_AUDIT_IDS ?? 10_000_000)): Promise<AuditBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-audit-'));
  try {
    const file = join(dir, 'ids.txt');
    await writeIds(file, n);
    return runAudit(['audit', file, '--layout', 'twitter', '--json', '--tmp-dir', dir]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PG_URL = process.env.SEQUOIA_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface AuditDbBenchResult {
  readonly db: AuditBenchResult;
  /** `psql \copy (query) to /dev/null` (MySQL: the `mariadb` client to /dev/null): the database sending the rows, nothing parsed. */
  readonly copySeconds: number | undefined;
  /**
   * The Node driver alone receiving the same rows the audit reads, nothing done with them: pg with
   * pg-copy-streams draining the COPY (MySQL: mysql2's row stream, rows as arrays of text, as the audit
   * asks for them). What any reader in Node pays before its own parsing.
   */
  readonly driverSeconds: number | undefined;
}

/** Wall seconds of a node ES module script run from the project (its node_modules), undefined if it fails. */
function timeNodeScript(code: string): number | undefined {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  return r.status === 0 ? (performance.now() - t0) / 1000 : undefined;
}

const MY_URL = process.env.SEQUOIA_TEST_MYSQL ?? 'mysql://root@127.0.0.1:3306/test';

/**
 * The same N IDs in a MariaDB/MySQL table (its SEQUENCE engine's
 * seq_0_to_N, else a recursive CTE), audited with `--db mysql://… --query`;
 * undefined when no MySQL answers at SEQUOIA_TEST_MYSQL.
 */
export async function benchAuditMysql(n = Number(process.env.BENCH_AUDIT_IDS ?? 10_000_000)): Promise<AuditDbBenchResult | undefined> {
  const { default: mysql } = await import('mysql2/promise');
  let admin: Connection;
  try {
    admin = await mysql.createConnection({ uri: MY_URL });
  } catch {
    return undefined;
  }
  const table = `bench_audit_${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-audit-my-'));
  try {
    let step = 7_919;
    while (gcd(step, n) !== 1) step += 2;
    await admin.query(
      `CREATE TABLE ${table} (id BIGINT NOT NULL) ENGINE=InnoDB SELECT 1000000000000 + ((seq * ${step}) % ${n}) AS id FROM seq_0_to_${n - 1}`,
    );
    await admin.query(`INSERT INTO ${table} VALUES (1000000000042)`);
    const query = `SELECT id FROM ${table}`;
    const u = new URL(MY_URL);
    const cli = ['--batch', '--skip-column-names', '-h', u.hostname, '-P', u.port || '3306', '-u', decodeURIComponent(u.username)];
    const t0 = performance.now();
    const client = spawnSync('mariadb', [...cli, u.pathname.slice(1), '-e', query], { stdio: ['ignore', 'ignore', 'pipe'] });
    const copySeconds = client.status === 0 ? (performance.now() - t0) / 1000 : undefined;
    const driverSeconds = timeNodeScript(
      `import mysql from 'mysql2'; const c = mysql.createConnection({ uri: ${JSON.stringify(MY_URL)}, supportBigNumbers: true, bigNumberStrings: true, rowsAsArray: true });` +
        ` let n = 0; await new Promise((ok, no) => c.query(${JSON.stringify(query)}).on('result', () => { n++; }).on('error', no).on('end', ok)); c.end();`,
    );
    const db = runAudit(['audit', '--db', MY_URL, '--query', query, '--layout', 'twitter', '--json', '--tmp-dir', dir]);
    return { db, copySeconds, driverSeconds };
  } finally {
    await admin.query(`DROP TABLE IF EXISTS ${table}`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The same N IDs (the same permutation and duplicate) in a PostgreSQL table,
 * audited with `--db … --query 'SELECT id FROM t'`; undefined when no
 * PostgreSQL answers at SEQUOIA_TEST_POSTGRES (default the local one).
 */
export async function benchAuditDb(n = Number(process.env.BENCH_AUDIT_IDS ?? 10_000_000)): Promise<AuditDbBenchResult | undefined> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: PG_URL });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  const table = `bench_audit_${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-audit-db-'));
  try {
    let step = 7_919;
    while (gcd(step, n) !== 1) step += 2;
    await admin.query(
      `CREATE UNLOGGED TABLE ${table} AS SELECT 1000000000000 + ((i * ${step}::bigint) % ${n}) AS id FROM generate_series(0, ${n - 1}) AS i`,
    );
    await admin.query(`INSERT INTO ${table} VALUES (1000000000042)`);
    await admin.query(`VACUUM ANALYZE ${table}`);
    const query = `SELECT id FROM ${table}`;
    const t0 = performance.now();
    const psql = spawnSync('psql', [PG_URL, '-q', '-c', `\\copy (${query}) to /dev/null`], { encoding: 'utf8' });
    const copySeconds = psql.status === 0 ? (performance.now() - t0) / 1000 : undefined;
    const driverSeconds = timeNodeScript(
      `import pg from 'pg'; import { to } from 'pg-copy-streams'; const c = new pg.Client({ connectionString: ${JSON.stringify(PG_URL)} }); await c.connect();` +
        ` let n = 0; const s = c.query(to(${JSON.stringify(`COPY (${query}) TO STDOUT`)})); s.on('data', (b) => { n += b.length; });` +
        ` await new Promise((ok, no) => { s.on('end', ok); s.on('error', no); }); await c.end();`,
    );
    const db = runAudit(['audit', '--db', PG_URL, '--query', query, '--layout', 'twitter', '--json', '--tmp-dir', dir]);
    return { db, copySeconds, driverSeconds };
  } finally {
    await admin.query(`DROP TABLE IF EXISTS ${table}`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

function runAudit(args: string[]): AuditBenchResult {
  const time = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const argv = [BIN, ...args];
  const started = performance.now();
  const r = time
    ? spawnSync(time, ['-f', '%U %S %M', process.execPath, ...argv], { encoding: 'utf8', maxBuffer: 1 << 26 })
    : spawnSync(process.execPath, argv, { encoding: 'utf8', maxBuffer: 1 << 26 });
  const seconds = (performance.now() - started) / 1000;
  if (r.status !== 1) throw new Error(`audit exited ${r.status}: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as {
    summary: { count: number; spilledRuns: number };
    findings: Array<{ kind: string; count: number }>;
  };
  const m = time ? /([\d.]+) ([\d.]+) (\d+)\s*$/.exec(r.stderr) : null;
  const kb = m ? Number(m[3]) : Number.NaN;
  return {
    ids: report.summary.count,
    seconds,
    idsPerSecond: report.summary.count / seconds,
    peakRssMiB: Number.isFinite(kb) ? kb / 1024 : undefined,
    cpuSeconds: m ? Number(m[1]) + Number(m[2]) : undefined,
    spilledRuns: report.summary.spilledRuns,
    duplicatesFound: report.findings.find((f) => f.kind === 'duplicates')?.count ?? 0,
  };
}
