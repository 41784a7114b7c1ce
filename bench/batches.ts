/**
 * Batches next to single IDs (issue 28, item 10): p99 of single-ID requests
 * (`GET /api/segment/get/{tag}`, wrk -c10) on one server process, alone,
 * next to 20 connections asking `count=1`, and next to 20 connections asking
 * `count=10000` (a second wrk, started first). The servers measured side by
 * side: this build, and, when `BENCH_BASELINE_CLI` names another build's
 * `dist/cli/main.js` (e.g. the commit before the fix), that one too; rounds
 * alternate between them, medians are reported.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type WrkResult, wrkAsync } from './http.js';
import { median, startChild, stopChild } from './util.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

export type Load = 'alone' | 'count=1' | 'count=10000';
export interface BatchBenchRow {
  readonly server: string;
  readonly load: Load;
  /** The single-ID requests measured. */
  readonly single: WrkResult;
  /** The load's own requests/s (undefined alone). */
  readonly loadRps: number | undefined;
}

export async function benchBatches(opts: { rounds?: number; seconds?: number } = {}): Promise<BatchBenchRow[]> {
  const rounds = opts.rounds ?? 3;
  const seconds = opts.seconds ?? 5;
  const builds: { name: string; cli: string }[] = [{ name: 'this build', cli: join(root, 'dist', 'cli', 'main.js') }];
  if (process.env.BENCH_BASELINE_CLI) builds.push({ name: 'baseline', cli: process.env.BENCH_BASELINE_CLI });
  const servers = [];
  for (const b of builds) {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-batches-'));
    const store = `sqlite:${join(dir, 'bench.db')}`;
    execFileSync(process.execPath, [b.cli, 'tag', 'create', 'bench', '--step', '1000000', '--store', store, '--state-dir', dir]);
    const s = await startChild([
      b.cli,
      'serve',
      '--port',
      '0',
      '--workers',
      '1',
      '--store',
      store,
      '--state-dir',
      dir,
      '--log-level',
      'info',
    ]);
    servers.push({ ...b, ...s });
  }
  const results = new Map<string, { single: WrkResult[]; load: number[] }>();
  try {
    for (let r = 0; r < rounds; r++) {
      for (const s of servers) {
        for (const load of ['alone', 'count=1', 'count=10000'] as const) {
          const single = `${s.url}/api/segment/get/bench`;
          let loadRun: Promise<WrkResult> | undefined;
          if (load !== 'alone') {
            loadRun = wrkAsync(`${s.url}/v1/segment/bench?${load}`, { threads: 1, connections: 20, seconds: seconds + 2 });
            await new Promise((res) => setTimeout(res, 1000));
          }
          const measured = await wrkAsync(single, { threads: 1, connections: 10, seconds });
          const loadResult = await loadRun;
          const key = `${s.name}|${load}`;
          const acc = results.get(key) ?? { single: [], load: [] };
          acc.single.push(measured);
          if (loadResult) acc.load.push(loadResult.rps);
          results.set(key, acc);
        }
      }
    }
  } finally {
    for (const s of servers) await stopChild(s.child);
  }
  return [...results].map(([key, v]) => {
    const [server, load] = key.split('|') as [string, Load];
    return {
      server,
      load,
      single: {
        rps: median(v.single.map((x) => x.rps)),
        p50ms: median(v.single.map((x) => x.p50ms)),
        p99ms: median(v.single.map((x) => x.p99ms)),
      },
      loadRps: v.load.length ? median(v.load) : undefined,
    };
  });
}
