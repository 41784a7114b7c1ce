/**
 * The client SDK's rate from a buffered tag, against a real server (one
 * process, SQLite): sync `tryNext()` and async `next()`, next to a bare
 * counter and to Redis `INCR` per ID through ioredis, all in this run.
 * Targets (issue 5): next() ≥ 100× INCR; tryNext() ≥ 25% of the bare counter.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createClient } from '../src/client/index.js';
import { median, startChild, stopChild } from './util.js';

export interface ClientBenchRow {
  readonly name: string;
  readonly idsPerSec: number;
  /** Ratio to the bare counter of the same run. */
  readonly vsCounter: number;
  /** Ratio to Redis INCR per ID (NaN when Redis is not reachable). */
  readonly vsIncr: number;
}

export interface ClientBenchOptions {
  readonly rounds?: number;
  /** IDs per tryNext/counter round (default 20,000,000). */
  readonly ids?: number;
  /** IDs per next() round (default 5,000,000). */
  readonly asyncIds?: number;
  /** Seconds of INCR per round (default 1). */
  readonly incrSeconds?: number;
  readonly redisUrl?: string;
  /** IDs per end-to-end round (default 2,000,000). */
  readonly sustainedIds?: number;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

function runCounter(n: number): number {
  let c = 0;
  const next = () => ++c;
  let acc = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) acc ^= next();
  const ms = performance.now() - t0;
  if (acc === -1) console.log(acc);
  return (n / ms) * 1000;
}

export async function benchClient(opts: ClientBenchOptions = {}): Promise<ClientBenchRow[]> {
  const rounds = opts.rounds ?? 3;
  const N = opts.ids ?? 20_000_000;
  const A = opts.asyncIds ?? 5_000_000;
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-client-'));
  const store = `sqlite:${join(dir, 'bench.db')}`;
  const cli = join(root, 'dist', 'cli', 'main.js');
  execFileSync(process.execPath, [cli, 'tag', 'create', 'bench', '--step', '1000000', '--store', store, '--state-dir', dir]);
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
  const client = createClient({ url: seq.url, tags: ['bench'], batch: { initial: 500_000, min: 500_000, max: 500_000 } });
  let redis: Redis | undefined;
  try {
    await client.ready();
    redis = new Redis(opts.redisUrl ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    try {
      await redis.connect();
    } catch {
      redis.disconnect();
      redis = undefined;
    }
    const counter: number[] = [];
    const sync: number[] = [];
    const asyncRates: number[] = [];
    const incr: number[] = [];
    const sustained: number[] = [];
    /** Runs fn over the IDs buffered now, n in all, refilling between runs untimed; IDs/s. */
    const timed = async (n: number, fn: (k: number) => Promise<void>): Promise<number> => {
      let done = 0;
      let ms = 0;
      while (done < n) {
        if (client.buffered('bench') === 0) await client.ready();
        const k = Math.min(n - done, client.buffered('bench'));
        const t = performance.now();
        await fn(k);
        ms += performance.now() - t;
        done += k;
        await client.next('bench'); // untimed: lets the background fetch land
      }
      return (n / ms) * 1000;
    };
    for (let r = 0; r < rounds; r++) {
      counter.push(runCounter(N));

      // Hot path: only IDs already in the buffer are timed (a refill is awaited outside the clock).
      sync.push(
        await timed(N, async (k) => {
          let last = 0n;
          for (let j = 0; j < k; j++) last = client.tryNext('bench') ?? -1n;
          if (last < 0n) throw new Error('tryNext found the buffer empty');
        }),
      );
      asyncRates.push(
        await timed(A, async (k) => {
          let last = 0n;
          for (let j = 0; j < k; j++) last = await client.next('bench');
          if (last < 0n) console.log(last);
        }),
      );
      // End to end: every ID fetched over HTTP during the loop (bounded by the server and JSON).
      const E = opts.sustainedIds ?? 2_000_000;
      let t0 = performance.now();
      let last = 0n;
      for (let j = 0; j < E; j++) {
        const v = client.tryNext('bench');
        last = v === undefined ? await client.next('bench') : v;
      }
      sustained.push((E / (performance.now() - t0)) * 1000);
      if (last < 0n) console.log(last);

      if (redis) {
        const until = performance.now() + (opts.incrSeconds ?? 1) * 1000;
        let n = 0;
        t0 = performance.now();
        while (performance.now() < until) {
          await redis.incr('sequoia:bench:incr');
          n++;
        }
        incr.push((n / (performance.now() - t0)) * 1000);
      }
    }
    const c = median(counter);
    const i = incr.length ? median(incr) : Number.NaN;
    const row = (name: string, v: number): ClientBenchRow => ({ name, idsPerSec: v, vsCounter: v / c, vsIncr: v / i });
    return [
      row('bare counter `() => ++n`', c),
      row('client `tryNext(tag)` (sync, buffered)', median(sync)),
      row('client `await next(tag)` (buffered)', median(asyncRates)),
      row('client end to end (tryNext, else await next; every ID over HTTP in the loop)', median(sustained)),
      row('Redis `INCR` per ID (ioredis, awaited)', i),
    ];
  } finally {
    await client.close();
    redis?.disconnect();
    await stopChild(seq.child);
  }
}
