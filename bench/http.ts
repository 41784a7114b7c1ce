/** HTTP throughput and latency with wrk: Sequoia against bare node:http, same machine, same run. */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, startChild, stopChild } from './util.js';

export interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
}

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v.trim());
  if (!m) return Number.NaN;
  const x = Number(m[1]);
  return m[2] === 'us' ? x / 1000 : m[2] === 's' ? x * 1000 : x;
}

export interface WrkOptions {
  readonly connections: number;
  readonly seconds: number;
  /** wrk threads (default 2). */
  readonly threads?: number;
  readonly headers?: readonly string[];
  /** wrk's --timeout, e.g. '20s' (wrk's default otherwise). */
  readonly timeout?: string;
}

function wrkArgs(url: string, o: WrkOptions): string[] {
  return [
    `-t${o.threads ?? 2}`,
    `-c${o.connections}`,
    `-d${o.seconds}s`,
    ...(o.timeout ? ['--timeout', o.timeout] : []),
    '--latency',
    ...(o.headers ?? []).flatMap((h) => ['-H', h]),
    url,
  ];
}

/** wrk's report, with its worst latency and the errors it counted (non-2xx answers and timeouts). */
export function parseWrk(out: string): WrkResult & { maxMs: number; errors: number } {
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50ms: toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99ms: toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    maxMs: toMs(/Latency\s+\S+\s+\S+\s+(\S+)/.exec(out)?.[1] ?? ''),
    errors: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) + Number(/Socket errors:.*timeout (\d+)/.exec(out)?.[1] ?? 0),
  };
}

function strict(url: string, out: string): WrkResult {
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (non2xx) throw new Error(`wrk saw ${non2xx[1]} error responses from ${url}`);
  const { rps, p50ms, p99ms } = parseWrk(out);
  return { rps, p50ms, p99ms };
}

/** wrk, failing on any non-2xx answer. */
export function wrk(url: string, connections: number, seconds: number, headers: string[] = []): WrkResult {
  return strict(url, execFileSync('wrk', wrkArgs(url, { connections, seconds, headers }), { encoding: 'utf8' }));
}

/** wrk as a child: the run may measure something this process must keep serving meanwhile (a fault proxy). */
export function wrkAsync(url: string, o: WrkOptions): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    execFile('wrk', wrkArgs(url, o), { encoding: 'utf8' }, (err, out) => {
      if (err) return reject(err);
      try {
        resolve(strict(url, out));
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
}

/** wrk counting errors instead of failing on them. */
export function wrkCounting(url: string, o: WrkOptions): ReturnType<typeof parseWrk> {
  return parseWrk(execFileSync('wrk', wrkArgs(url, o), { encoding: 'utf8' }));
}

/**
 * wrk with one thread on the machine's last CPU (`taskset`), where it can be
 * pinned: a server's threads (event loop, store, state dir) then keep the
 * other cores to themselves, as they would with clients on other machines,
 * instead of sharing every core with wrk's threads. Undefined where it cannot
 * be pinned (one CPU, no taskset).
 */
export function wrkPinned(url: string, connections: number, seconds: number): WrkResult | undefined {
  const cpus = availableParallelism();
  if (cpus < 2 || spawnSync('taskset', ['-V']).error !== undefined) return undefined;
  return strict(
    url,
    execFileSync('taskset', ['-c', String(cpus - 1), 'wrk', ...wrkArgs(url, { connections, seconds, threads: 1 })], { encoding: 'utf8' }),
  );
}

export function haveWrk(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

export async function benchHttp(rounds: number, seconds: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-'));
  const store = `sqlite:${join(dir, 'bench.db')}`;
  const cli = join(root, 'dist', 'cli', 'main.js');
  execFileSync(process.execPath, [cli, 'tag', 'create', 'bench', '--step', '1000000', '--store', store, '--state-dir', dir]);
  // One process against one bare process: the multi-core comparison is bench/cluster.ts.
  const seq = await startChild([
    cli,
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
  // As production runs: client tokens and a rate limit (high enough that wrk is never refused, so it is checked on every request).
  const token = 'bench-client-token-0123456789';
  const secured = await startChild([
    cli,
    'serve',
    '--port',
    '0',
    '--workers',
    '1',
    '--store',
    store,
    '--state-dir',
    join(dir, 'secured'),
    '--log-level',
    'info',
    '--client-tokens',
    JSON.stringify([
      { token, tags: ['bench'], name: 'bench' },
      { token: 'other-client-token-0123456789', tags: ['*'], name: 'other' },
    ]),
    '--rate-limit',
    '10000000',
    '--rate-limit-burst',
    '10000000',
  ]);
  const bare = await startChild([join(root, 'dist-bench', 'bench', 'bare-http.js')]);
  const auth = [`Authorization: Bearer ${token}`];
  const res = {
    seqSingle: [] as WrkResult[],
    bareSingle: [] as WrkResult[],
    seqBatch: [] as WrkResult[],
    bareBatch: [] as WrkResult[],
    securedSingle: [] as WrkResult[],
    bareSingleAuth: [] as WrkResult[],
  };
  try {
    // warm up all three
    wrk(`${seq.url}/api/segment/get/bench`, 50, 2);
    wrk(`${secured.url}/api/segment/get/bench`, 50, 2, auth);
    wrk(`${bare.url}/`, 50, 2);
    for (let r = 0; r < rounds; r++) {
      res.bareSingle.push(wrk(`${bare.url}/`, 50, seconds));
      res.seqSingle.push(wrk(`${seq.url}/api/segment/get/bench`, 50, seconds));
      // the same header to the bare server: both parse the same bytes
      res.bareSingleAuth.push(wrk(`${bare.url}/`, 50, seconds, auth));
      res.securedSingle.push(wrk(`${secured.url}/api/segment/get/bench`, 50, seconds, auth));
      res.bareBatch.push(wrk(`${bare.url}/batch`, 50, seconds));
      res.seqBatch.push(wrk(`${seq.url}/v1/segment/bench?count=1000`, 50, seconds));
    }
  } finally {
    await stopChild(seq.child);
    await stopChild(secured.child);
    await stopChild(bare.child);
  }
  const med = (xs: WrkResult[]): WrkResult => ({
    rps: median(xs.map((x) => x.rps)),
    p50ms: median(xs.map((x) => x.p50ms)),
    p99ms: median(xs.map((x) => x.p99ms)),
  });
  return {
    seqSingle: med(res.seqSingle),
    bareSingle: med(res.bareSingle),
    seqBatch: med(res.seqBatch),
    bareBatch: med(res.bareBatch),
    securedSingle: med(res.securedSingle),
    bareSingleAuth: med(res.bareSingleAuth),
    // Each round's Sequoia run against the bare run just before it, then the median: on a shared,
    // noisy machine the pairs drift together, so their ratios scatter less than the medians' ratio.
    paired: {
      single: paired(res.seqSingle, res.bareSingle),
      secured: paired(res.securedSingle, res.bareSingleAuth),
      batch: paired(res.seqBatch, res.bareBatch),
    },
  };
}

function paired(seq: WrkResult[], bare: WrkResult[]): { rps: number; p99: number } {
  return {
    rps: median(seq.map((x, i) => x.rps / (bare[i] as WrkResult).rps)),
    p99: median(seq.map((x, i) => x.p99ms / (bare[i] as WrkResult).p99ms)),
  };
}
