/**
 * SQLite and the state dir off the event loop (issue 28 item 4), before and
 * after, side by side: the same request path measured on two builds in one
 * run, rounds alternating between them. `before` is a `dist/` built from the
 * commit before the change (BENCH_BEFORE_DIST; see BENCHMARKS.md for how it
 * was built), `after` is this checkout's `dist/`.
 *
 * Each server: the SQLite store and a state dir on the local disk, one tag,
 * `--max-step 1000` so segment loads (a store transaction and a mark, each
 * committed with fsync) keep happening under load. Measured with wrk -c50:
 * 1. single IDs, `GET /api/segment/get/{tag}`: req/s, p50, p99, with loads;
 * 2. `GET /v1/uuid` (needs no file) while another process holds a write lock
 *    on `state.db` for the whole run: p99 and max; in `before`, every tick
 *    reservation of the snowflake worker and every load froze the loop for up
 *    to the busy timeout.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { haveWrk, wrkCounting } from './http.js';
import { median, startChild, stopChild } from './util.js';

export interface OffLoopRow {
  readonly build: 'before' | 'after';
  readonly rps: number;
  readonly p50ms: number;
  readonly p99ms: number;
  readonly loads: number;
  readonly lockedP99ms: number;
  readonly lockedMaxMs: number;
  readonly lockedRps: number;
  readonly lockedErrors: number;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

function holdLock(path: string): ChildProcess {
  const sqlite = createRequire(join(root, 'package.json')).resolve('better-sqlite3');
  const script = `const D = require(${JSON.stringify(sqlite)}); const db = new D(process.argv[1], { timeout: 10000 }); db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n'); setInterval(() => {}, 1000);`;
  return spawn(process.execPath, ['-e', script, path], { stdio: ['ignore', 'pipe', 'inherit'] });
}

async function locked(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve) => child.stdout?.once('data', () => resolve()));
}

async function loads(url: string): Promise<number> {
  const body = (await (await fetch(`${url}/v1/status`)).json()) as { tags?: { tag: string; loads?: number }[] };
  return body.tags?.find((t) => t.tag === 't')?.loads ?? 0;
}

async function measure(dist: string, seconds: number): Promise<Omit<OffLoopRow, 'build'>> {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-offloop-'));
  const store = `sqlite:${join(dir, 'ids.db')}`;
  const stateDir = join(dir, 'state');
  const cli = join(dist, 'cli', 'main.js');
  execFileSync(process.execPath, [cli, 'tag', 'create', 't', '--step', '1000', '--store', store, '--state-dir', stateDir]);
  const { child, url } = await startChild([
    cli,
    'serve',
    '--port',
    '0',
    '--store',
    store,
    '--state-dir',
    stateDir,
    '--max-step',
    '1000',
    '--log-level',
    'info',
  ]);
  try {
    wrkCounting(`${url}/api/segment/get/t`, { connections: 50, seconds: 1, timeout: '20s' }); // warm-up
    const l0 = await loads(url);
    const plain = wrkCounting(`${url}/api/segment/get/t`, { connections: 50, seconds, timeout: '20s' });
    const l1 = await loads(url);
    const holder = holdLock(join(stateDir, 'state.db'));
    try {
      await locked(holder);
      const l = wrkCounting(`${url}/v1/uuid`, { connections: 50, seconds, timeout: '20s' });
      return {
        rps: plain.rps,
        p50ms: plain.p50ms,
        p99ms: plain.p99ms,
        loads: l1 - l0,
        lockedP99ms: l.p99ms,
        lockedMaxMs: l.maxMs,
        lockedRps: l.rps,
        lockedErrors: l.errors,
      };
    } finally {
      holder.kill('SIGKILL');
    }
  } finally {
    await stopChild(child);
  }
}

/** Rounds alternate before/after; each figure is the median over rounds. */
export async function benchOffLoop(
  opts: { before?: string; rounds?: number; seconds?: number } = {},
): Promise<OffLoopRow[] | { note: string }> {
  if (!haveWrk()) return { note: 'skipped: `wrk` is not installed' };
  const before = opts.before ?? process.env.BENCH_BEFORE_DIST;
  const builds: Array<['before' | 'after', string]> = [['after', join(root, 'dist')]];
  if (before) builds.unshift(['before', before]);
  const rounds = opts.rounds ?? 3;
  const seconds = opts.seconds ?? 5;
  const got = new Map<string, Array<Omit<OffLoopRow, 'build'>>>();
  for (let r = 0; r < rounds; r++) {
    for (const [name, dist] of r % 2 ? [...builds].reverse() : builds) {
      const list = got.get(name) ?? [];
      list.push(await measure(dist, seconds));
      got.set(name, list);
    }
  }
  return builds.map(([build]) => {
    const xs = got.get(build) ?? [];
    const med = (k: keyof Omit<OffLoopRow, 'build'>) => median(xs.map((x) => x[k]));
    return {
      build,
      rps: med('rps'),
      p50ms: med('p50ms'),
      p99ms: med('p99ms'),
      loads: med('loads'),
      lockedP99ms: med('lockedP99ms'),
      lockedMaxMs: med('lockedMaxMs'),
      lockedRps: med('lockedRps'),
      lockedErrors: med('lockedErrors'),
    };
  });
}
