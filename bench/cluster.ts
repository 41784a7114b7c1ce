/**
 * A multi-core server against its limit: `sequoia serve --workers 2` versus
 * bare node:http under node:cluster with 2 workers (bare-cluster.ts), single
 * IDs (`GET /api/segment/get/{tag}`, text) under wrk -c100, same run; and, for
 * scale, Redis INCR without pipelining (`redis-benchmark -c 50 -t incr`) when
 * redis-benchmark is installed. Targets (issue 5): ≥ 70% of the bare
 * cluster's requests/s, p99 at most 1.3× its p99.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type WrkResult, wrk } from './http.js';
import { median, startChild, stopChild } from './util.js';

export interface ClusterBenchRow {
  readonly name: string;
  readonly rps: number;
  readonly p50ms: number;
  readonly p99ms: number;
  /** requests/s relative to the bare cluster of the same run. */
  readonly vsBare: number;
  /** p99 relative to the bare cluster's p99 (NaN where wrk gave none). */
  readonly p99VsBare: number;
}

export interface ClusterBenchOptions {
  readonly rounds?: number;
  readonly seconds?: number;
  readonly connections?: number;
  readonly workers?: number;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

function redisIncr(): number | undefined {
  const r = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', '6379', '-c', '50', '-n', '200000', '-t', 'incr', '-q'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.error || r.status !== 0) return undefined;
  const m = /INCR:\s+([\d.]+) requests per second/.exec(r.stdout);
  return m ? Number(m[1]) : undefined;
}

export async function benchCluster(opts: ClusterBenchOptions = {}): Promise<ClusterBenchRow[]> {
  const rounds = opts.rounds ?? 3;
  const seconds = opts.seconds ?? 5;
  const c = opts.connections ?? 100;
  const workers = opts.workers ?? 2;
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-cluster-'));
  const store = `sqlite:${join(dir, 'bench.db')}`;
  const cli = join(root, 'dist', 'cli', 'main.js');
  execFileSync(process.execPath, [cli, 'tag', 'create', 'bench', '--step', '1000000', '--store', store, '--state-dir', dir]);
  const seq = await startChild([
    cli,
    'serve',
    '--port',
    '0',
    '--workers',
    String(workers),
    '--store',
    store,
    '--state-dir',
    dir,
    '--log-level',
    'info',
  ]);
  const bare = await startChild([join(root, 'dist-bench', 'bench', 'bare-cluster.js'), String(workers)]);
  const s: WrkResult[] = [];
  const b: WrkResult[] = [];
  const incr: number[] = [];
  try {
    wrk(`${seq.url}/api/segment/get/bench`, c, 2);
    wrk(`${bare.url}/`, c, 2);
    for (let r = 0; r < rounds; r++) {
      b.push(wrk(`${bare.url}/`, c, seconds));
      s.push(wrk(`${seq.url}/api/segment/get/bench`, c, seconds));
      const i = redisIncr();
      if (i !== undefined) incr.push(i);
    }
  } finally {
    await stopChild(seq.child);
    await stopChild(bare.child);
  }
  const med = (xs: WrkResult[]) => ({
    rps: median(xs.map((x) => x.rps)),
    p50ms: median(xs.map((x) => x.p50ms)),
    p99ms: median(xs.map((x) => x.p99ms)),
  });
  const bm = med(b);
  const sm = med(s);
  const rows: ClusterBenchRow[] = [
    { name: `bare node:http, node:cluster ${workers} workers (counter, text)`, ...bm, vsBare: 1, p99VsBare: 1 },
    {
      name: `Sequoia \`serve --workers ${workers}\` \`GET /api/segment/get/{tag}\``,
      ...sm,
      vsBare: sm.rps / bm.rps,
      p99VsBare: sm.p99ms / bm.p99ms,
    },
  ];
  if (incr.length) {
    const i = median(incr);
    rows.push({
      name: 'Redis `INCR`, no pipelining (redis-benchmark -c 50)',
      rps: i,
      p50ms: Number.NaN,
      p99ms: Number.NaN,
      vsBare: i / bm.rps,
      p99VsBare: Number.NaN,
    });
  }
  return rows;
}
