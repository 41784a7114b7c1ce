/**
 * `sequoia serve --workers N`: one server per core with node:cluster.
 *
 * The primary forks N workers; each is a complete, independent server (its
 * own IdService, own segments, own high-water marks, its own snowflake worker
 * id from the configured provider) and they share one listening port
 * (cluster's round-robin: the primary accepts, workers serve). Uniqueness
 * needs nothing new: workers are simply N servers on one store, which the
 * store already keeps disjoint (one atomic update per segment).
 *
 * - The port: the primary binds it once (a probe socket on the configured
 *   host) before forking, so a port in use fails in one line before any worker
 *   leases anything; for port 0 it reads the OS's choice and gives that port
 *   to every worker, so all workers and every replacement share one port.
 * - State directory: one for the whole server. Every worker reads and writes
 *   the same marks and ticks (state-dir.ts: one SQLite file, transactions), so
 *   the rollback guard covers the server: an answer is judged by the highest
 *   mark any worker recorded before its request was sent (judging by later
 *   marks would take worker A's [100,200) for a rollback after worker B's
 *   [200,300)). Only the ZooKeeper provider keeps a per-slot directory
 *   (`<stateDir>/workers/<i>`, its cached id), so each worker is its own node.
 * - A worker that dies is replaced in the same slot, after 100 ms doubling to
 *   30 s while replacements keep dying young (reset after 30 s of life).
 * - SIGTERM/SIGINT to the primary: every worker drains (stops accepting,
 *   finishes in-flight requests, closes its store) and the primary exits 0
 *   (1 if a worker had to be killed or failed).
 * - The primary logs `listening` with the URL once every worker is up (tests
 *   and benchmarks parse that line); workers log `worker listening`.
 * - Descriptors: the primary accepts each connection and hands it to a
 *   worker over IPC. A worker out of file descriptors cannot receive it, and
 *   Node's round-robin then never offers that worker another connection (the
 *   acknowledgement it waits for never comes): the server stops answering
 *   for good, silently. So every worker keeps its connections below its
 *   open-file limit (start-server.ts, `maxConnections`; http-front.ts answers
 *   and closes the surplus on arrival), and the primary logs Node's process warnings.
 * - `--workers 1` (the default) runs the server in this process, without
 *   cluster; `--workers auto` (kept as 0) means one worker per core
 *   (os.availableParallelism()). N workers interleave like N servers: IDs of a
 *   tag increase per worker, not across them.
 */
import { availableParallelism } from 'node:os';
import type { ServeConfig } from './config.js';
import { runPrimary } from './cluster-primary.js';
import { discardWarmThreads } from '../adapters/kit/off-loop/warm.js';

/** Messages between primary and workers. */
export type WorkerMessage = { readonly type: 'need-config' } | { readonly type: 'ready'; readonly url: string; readonly pid: number };
export type PrimaryMessage = { readonly type: 'config'; readonly config: ServeConfig };

export function workerCount(config: Pick<ServeConfig, 'workers'>): number {
  return config.workers === 0 ? availableParallelism() : config.workers;
}

/** Runs `serve`: in-process for one worker, else a cluster primary. Resolves once listening. */
export async function serve(config: ServeConfig): Promise<void> {
  const n = workerCount(config);
  if (n <= 1) {
    const { startServer } = await import('./start-server.js');
    await startServer(config, { handleSignals: true });
    return;
  }
  discardWarmThreads(); // the primary opens its state dir in-thread; the workers are processes of their own
  await runPrimary(config, n);
}
