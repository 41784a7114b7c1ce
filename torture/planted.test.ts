/**
 * The harness catches planted bugs. Each case copies the built package,
 * breaks one promise in the copy, runs the matching scenario through the
 * torture CLI against it, and expects repeats in the report and exit status 1:
 * - the rollback guard taken out (restore-sqlite: the store restored from a
 *   snapshot hands its IDs out again);
 * - every worker and server forced onto one snowflake worker id
 *   (snowflake-workers: two processes issue the same (tick, worker, sequence));
 * - the SQLite store's range ledger skipping rows (segment-kills: IDs
 *   covered by no range of the ledger).
 * The same scenarios run unplanted in the short set (.ci/run), where they pass.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from './report.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Inside the checkout, so the copy still finds node_modules and package.json ("type": "module").
const WORK = join(ROOT, 'test-artifacts', `planted-${process.pid}`);

/** A copy of dist/ with `file` patched; fails when the pattern is gone (the code moved: update the plant). */
function plant(name: string, file: string, pattern: RegExp, replacement: string): string {
  const dist = join(WORK, name, 'dist');
  cpSync(join(ROOT, 'dist'), dist, { recursive: true });
  // dist/ reads its version from ../package.json (and is ESM by it).
  cpSync(join(ROOT, 'package.json'), join(WORK, name, 'package.json'));
  const path = join(dist, file);
  const before = readFileSync(path, 'utf8');
  const after = before.replace(pattern, replacement);
  if (after === before) throw new Error(`plant ${name}: ${pattern} not found in dist/${file}`);
  writeFileSync(path, after);
  return dist;
}

function torture(
  dist: string,
  scenario: string,
  out: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'dist-torture', 'torture', 'run.js'), '--short', '--only', scenario, '--seed', '12', '--dist', dist, '--out', out],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (status) => resolve({ status, output }));
  });
}

/** Runs `scenario` on a planted copy, expects exit status 1, and answers the report (JSON and Markdown). */
async function failedRun(dist: string, name: string, scenario: string): Promise<{ report: RunReport; markdown: string }> {
  const out = join(WORK, name, 'out');
  const r = await torture(dist, scenario, out);
  expect(r.status, r.output).toBe(1);
  return {
    report: JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as RunReport,
    markdown: readFileSync(join(out, 'report.md'), 'utf8'),
  };
}

describe('the torture harness catches planted bugs', () => {
  beforeAll(() => {
    if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
    mkdirSync(WORK, { recursive: true });
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.torture.json')], {
      cwd: ROOT,
      stdio: 'inherit',
    });
  }, 120_000);

  afterAll(() => rmSync(WORK, { recursive: true, force: true }));

  it('the rollback guard taken out: restore-sqlite reports repeats and exits 1', async () => {
    // Both of the guard's tests: below the high-water mark, and over a range the server accepted.
    const dist = plant('no-rollback-guard', 'core/segment/rollback-guard.js', /start < previous\.mark|a < e && s < b/g, 'false');
    const { report, markdown } = await failedRun(dist, 'no-rollback-guard', 'restore-sqlite');
    expect(report.ok).toBe(false);
    expect(report.repeats).toBeGreaterThan(0);
    expect(markdown).toMatch(/\*\*repeats: [1-9][0-9]*\*\*/);
  }, 180_000);

  it('two workers forced onto one worker id: snowflake-workers reports repeats and exits 1', async () => {
    const dist = plant(
      'one-worker-id',
      'app/worker-id-providers.js',
      /return new LeaseWorkerIdProvider\(store, leaseOptions\(o\)\);/,
      "return new StaticWorkerIdProvider(7, 'static');",
    );
    const { report } = await failedRun(dist, 'one-worker-id', 'snowflake-workers');
    expect(report.repeats).toBeGreaterThan(0);
    expect(report.scenarios[0]?.result.repeats[0]?.key).toBe('snowflake:twitter');
  }, 180_000);

  it('the SQLite store skipping ledger rows: segment-kills reports IDs the ledger does not cover and exits 1', async () => {
    const dist = plant(
      'ledger-gaps',
      'adapters/sqlite/sqlite-segment-store.js',
      // The allocation's ledger row is an INSERT … SELECT guarded by $7 (recording): skip about 3 in 10.
      /AND \$7`/,
      'AND $7 AND abs(random()) % 10 < 7`',
    );
    const { report, markdown } = await failedRun(dist, 'ledger-gaps', 'segment-kills');
    expect(report.repeats).toBe(0);
    expect(report.scenarios[0]?.failure, 'the scenario ran to its end').toBeUndefined();
    expect(report.scenarios[0]?.result.counts.unledgered).toBeGreaterThan(0);
    expect(markdown).toMatch(/\*\*IDs covered by no range of the ledger: [1-9][0-9]*\*\*/);
  }, 180_000);

  // A fault that does not take effect must fail its scenario, never pass having tested nothing.
  const clockScenario = (lib: string, name: string) => async () => {
    const out = join(WORK, name, 'out');
    const r = await torture(join(ROOT, 'dist'), 'clock-reject-static', out, { TORTURE_FAKETIME_LIB: lib });
    expect(r.status, r.output).toBe(1);
    expect(r.output).toMatch(/FAIL clock-reject-static/);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as RunReport;
    expect(report.ok).toBe(false);
    expect(report.scenarios[0]?.failure).toMatch(/clock fault (cannot|did not) take effect/);
    return report;
  };

  it(
    'libfaketime missing: the clock scenario fails, naming the fault',
    clockScenario('/nonexistent/libfaketimeMT.so.1', 'no-faketime'),
    60_000,
  );

  it('a preload the loader refuses: the clock scenario fails, naming the fault', clockScenario('/etc/hostname', 'bad-preload'), 60_000);

  it('a preload that loads but moves no clock: the clock scenario fails when the server clock is seen unmoved', async () => {
    const report = await clockScenario('/lib/x86_64-linux-gnu/libm.so.6', 'inert-preload')();
    expect(report.scenarios[0]?.failure).toMatch(/Date header says/);
  }, 90_000);

  it('the watchdog ends a run whose main thread spins, with a message and a non-zero end', async () => {
    const dir = join(WORK, 'watchdog');
    mkdirSync(dir, { recursive: true });
    const script = join(dir, 'spin.mjs');
    writeFileSync(
      script,
      `import { Watchdog } from ${JSON.stringify(join(ROOT, 'dist-torture', 'torture', 'watchdog.js'))};\nnew Watchdog().arm(300, 'test deadline');\nfor (;;) {}\n`,
    );
    const t0 = Date.now();
    const r = await new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [script], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code, signal) => resolve({ code, signal, stderr }));
    });
    expect(r.signal).toBe('SIGKILL');
    expect(r.stderr).toMatch(/torture: watchdog: test deadline/);
    expect(Date.now() - t0).toBeLessThan(20_000);
  }, 30_000);
});
