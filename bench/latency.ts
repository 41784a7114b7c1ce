/**
 * Does the double buffer hide the store? HTTP p99 of `GET
 * /api/segment/get/{tag}` (wrk) on a spawned `sequoia serve` whose store
 * connection goes through the fault proxy, with 50 ms added to every chunk in
 * each direction (so each store round trip costs at least 100 ms more) versus
 * none. Rounds alternate the two modes on one server; medians are reported.
 * A small --max-step keeps segment loads happening during every run (their
 * count is reported, as seen by the worker that answers /v1/status), so the
 * comparison includes loads, not just a warm buffer. Any non-2xx answer
 * (e.g. SEGMENTS_EXHAUSTED) fails the run.
 * Store: PostgreSQL if reachable, else Redis, else MariaDB/MySQL.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FaultProxy } from '../test/helpers/fault-proxy.js';
import { haveWrk, type WrkResult, wrkAsync } from './http.js';
import { STORE_TARGETS, BENCH_MYSQL_URL, BENCH_POSTGRES_URL, BENCH_REDIS_URL } from './stores.js';
import { median, startChild, stopChild } from './util.js';

export interface LatencyBenchOptions {
  /** Rounds of (no latency, added latency). Default 3. */
  readonly rounds?: number;
  /** Seconds per wrk run. Default 5. */
  readonly seconds?: number;
  /** Added latency per chunk and direction, ms. Default 50. */
  readonly latencyMs?: number;
  /** wrk connections. Default 50. */
  readonly connections?: number;
  /** The server's --max-step: small enough that segments load during each run. Default 100000. */
  readonly maxStep?: number;
}

export interface LatencyBenchResult {
  readonly store: string;
  readonly latencyMs: number;
  readonly base: WrkResult;
  readonly slow: WrkResult;
  /** Segment loads during the measured runs, summed over rounds. */
  readonly loadsBase: number;
  readonly loadsSlow: number;
  /** slow.p99 / base.p99: the double buffer hides the store when this stays within 1.10. */
  readonly p99Ratio: number;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

const CANDIDATES = [
  { name: 'postgres', url: BENCH_POSTGRES_URL },
  { name: 'redis', url: BENCH_REDIS_URL },
  { name: 'mysql', url: BENCH_MYSQL_URL },
];

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

async function loads(base: string, tag: string): Promise<number> {
  const r = await fetch(`${base}/v1/status`);
  const body = (await r.json()) as { tags?: { tag: string; loads?: number }[] };
  return body.tags?.find((t) => t.tag === tag)?.loads ?? 0;
}

/** Answers the measurement, or `{ note }` when wrk or every store is missing. */
export async function benchLatency(opts: LatencyBenchOptions = {}): Promise<LatencyBenchResult | { note: string }> {
  if (!haveWrk()) return { note: 'skipped: `wrk` is not installed' };
  const rounds = opts.rounds ?? 3;
  const seconds = opts.seconds ?? 5;
  const latencyMs = opts.latencyMs ?? 50;
  const connections = opts.connections ?? 50;
  const maxStep = opts.maxStep ?? 100_000;

  // the first reachable store (probed by opening it as the store bench does)
  let chosen: (typeof CANDIDATES)[number] | undefined;
  let drop: (() => Promise<void>) | undefined;
  let storeUrl = '';
  for (const c of CANDIDATES) {
    const target = STORE_TARGETS.find((t) => t.name === c.name);
    if (!target) continue;
    try {
      const o = await target.open();
      await o.store.init();
      await o.store.close();
      chosen = c;
      drop = o.drop;
      const ns = `sq_lat_${process.pid}`;
      storeUrl =
        c.name === 'redis' ? withParams(c.url, { keyPrefix: `${ns}:tag:`, tagsKey: `${ns}:tags` }) : withParams(c.url, { table: ns });
      break;
    } catch {
      // not reachable: next candidate
    }
  }
  if (!chosen) return { note: 'skipped: no PostgreSQL, Redis or MySQL reachable' };

  const target = new URL(chosen.url);
  const proxy = await FaultProxy.start(target.hostname, Number(target.port));
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-latency-'));
  const cli = join(root, 'dist', 'cli', 'main.js');
  const server = await startChild([
    cli,
    'serve',
    '--port',
    '0',
    '--workers',
    '1',
    '--store',
    FaultProxy.rewrite(storeUrl, proxy.port),
    '--state-dir',
    dir,
    '--max-step',
    String(maxStep),
    '--log-level',
    'info',
  ]);
  const tag = `lat${process.pid}`;
  const results = { base: [] as WrkResult[], slow: [] as WrkResult[] };
  let loadsBase = 0;
  let loadsSlow = 0;
  try {
    const created = await fetch(`${server.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag, step: 1000 }),
    });
    if (created.status !== 201) throw new Error(`cannot create the bench tag: ${created.status} ${await created.text()}`);
    const url = `${server.url}/api/segment/get/${tag}`;
    await wrkAsync(url, { connections, seconds: 2 }); // warm-up: JIT, and the step grows to --max-step
    for (let r = 0; r < rounds; r++) {
      for (const mode of ['base', 'slow'] as const) {
        proxy.slow(mode === 'slow' ? latencyMs : 0);
        const before = await loads(server.url, tag);
        try {
          results[mode].push(await wrkAsync(url, { connections, seconds }));
        } catch (e) {
          const probe = await fetch(`${server.url}/v1/status`);
          throw new Error(`${mode} round ${r}: ${(e as Error).message}; status: ${probe.status} ${await probe.text()}`, { cause: e });
        }
        const n = (await loads(server.url, tag)) - before;
        if (mode === 'slow') loadsSlow += n;
        else loadsBase += n;
      }
    }
  } finally {
    proxy.restore();
    await stopChild(server.child);
    await proxy.close();
    await drop?.().catch(() => {});
    await dropLatencyNamespace(chosen.name, storeUrl).catch(() => {});
  }
  const med = (xs: WrkResult[]): WrkResult => ({
    rps: median(xs.map((x) => x.rps)),
    p50ms: median(xs.map((x) => x.p50ms)),
    p99ms: median(xs.map((x) => x.p99ms)),
  });
  const base = med(results.base);
  const slow = med(results.slow);
  return { store: chosen.name, latencyMs, base, slow, loadsBase, loadsSlow, p99Ratio: slow.p99ms / base.p99ms };
}

/** Drops the table / keys the spawned server created. */
async function dropLatencyNamespace(kind: string, url: string): Promise<void> {
  const u = new URL(url);
  if (kind === 'postgres') {
    const { default: pg } = await import('pg');
    const table = u.searchParams.get('table') as string;
    u.searchParams.delete('table');
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    await c.query(`DROP TABLE IF EXISTS ${table}`);
    await c.query('DELETE FROM sequoia_schema WHERE component = $1', [table]);
    await c.end();
  } else if (kind === 'mysql') {
    const { default: mysql } = await import('mysql2/promise');
    const table = u.searchParams.get('table') as string;
    u.searchParams.delete('table');
    const c = await mysql.createConnection({ uri: u.toString() });
    await c.query(`DROP TABLE IF EXISTS ${table}`);
    await c.query('DELETE FROM sequoia_schema WHERE component = ?', [table]);
    await c.end();
  } else {
    const { Redis } = await import('ioredis');
    const prefix = (u.searchParams.get('tagsKey') as string).replace(/:tags$/, '');
    u.search = '';
    const r = new Redis(u.toString());
    const keys = await r.keys(`${prefix}:*`);
    if (keys.length > 0) await r.del(...keys);
    r.disconnect();
  }
}
