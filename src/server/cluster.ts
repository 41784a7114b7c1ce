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
 * - `--workers 1` (the default) runs the server in this process, without
 *   cluster; `--workers auto` (kept as 0) means one worker per core
 *   (os.availableParallelism()). N workers interleave like N servers: IDs of a
 *   tag increase per worker, not across them.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { redactStoreUrl } from '../adapters/create-store.js';
import type { ServeConfig } from '../cli/config.js';
import { VERSION } from '../version.js';
import { handleGatherInPrimary } from './cluster-gather.js';
import { reservePort } from './listen-check.js';

/** Messages between primary and workers. */
export type WorkerMessage =
  | { readonly type: 'need-config' }
  | { readonly type: 'ready'; readonly url: string; readonly pid: number };
export type PrimaryMessage = { readonly type: 'config'; readonly config: ServeConfig; readonly slot: number };

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
  await runPrimary(config, n);
}

interface Slot {
  worker: Worker | undefined;
  startedAt: number;
  ready: boolean;
  /** Consecutive young deaths: the restart delay doubles with each. */
  failures: number;
  timer: NodeJS.Timeout | undefined;
}

async function runPrimary(config: ServeConfig, n: number): Promise<void> {
  const logger = pino({ level: config.logLevel, base: { pid: process.pid, role: 'primary' } });
  // Checked before any worker starts (and leases anything): a port in use is one line, not one per worker.
  const probe = await reservePort(config.host, config.port);
  await probe.release();
  const port = probe.port;
  const shared: ServeConfig = { ...config, port };
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./cluster-worker.js', import.meta.url)), args: [] });

  const slots: Slot[] = Array.from({ length: n }, () => ({ worker: undefined, startedAt: 0, ready: false, failures: 0, timer: undefined }));
  let started = false;
  let stopping = false;
  let url = '';

  const startup = new Promise<void>((resolve, reject) => {
    const fork = (i: number) => {
      const slot = slots[i]!;
      slot.timer = undefined;
      const w = cluster.fork({ SEQUOIA_WORKER_SLOT: String(i) });
      slot.worker = w;
      slot.ready = false;
      slot.startedAt = Date.now();
      w.on('message', (m: WorkerMessage) => {
        if (handleGatherInPrimary(w, m, () => slots.flatMap((s) => (s.worker && s.ready ? [s.worker] : [])))) return;
        if (m.type === 'need-config') {
          const msg: PrimaryMessage = { type: 'config', config: { ...shared, workerSlot: i }, slot: i };
          w.send(msg);
        } else if (m.type === 'ready') {
          slot.ready = true;
          url ||= m.url;
          if (started) logger.info({ slot: i, workerPid: m.pid }, 'worker replaced');
          else if (slots.every((s) => s.ready)) {
            started = true;
            logger.info({ url, workers: n, workerPids: slots.map((s) => s.worker?.process.pid), store: redactStoreUrl(config.store), stateDir: config.stateDir, version: VERSION }, 'listening');
            resolve();
          }
        }
      });
      w.on('exit', (code, signal) => {
        if (slot.worker !== w) return;
        slot.worker = undefined;
        const lived = Date.now() - slot.startedAt;
        if (stopping) return;
        if (!started) {
          // A worker that cannot start (bad store, port taken) fails the whole start, like one process would.
          logger.error({ slot: i, workerPid: w.process.pid, code, signal }, 'worker failed to start');
          stopping = true;
          stopAll('SIGTERM');
          reject(new StartupFailed(typeof code === 'number' && code > 0 ? code : 1));
          return;
        }
        slot.failures = lived > 30_000 ? 0 : slot.failures + 1;
        const delay = Math.min(30_000, 100 * 2 ** Math.max(0, slot.failures - 1));
        logger.warn({ slot: i, workerPid: w.process.pid, code, signal, restartInMs: delay }, 'worker exited; replacing it');
        slot.timer = setTimeout(() => fork(i), delay);
      });
    };
    for (let i = 0; i < n; i++) fork(i);
  });

  function stopAll(signal: NodeJS.Signals): void {
    for (const s of slots) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = undefined;
      const pid = s.worker?.process.pid;
      if (pid !== undefined && s.worker?.isDead() === false) {
        try {
          process.kill(pid, signal);
        } catch {
          // already gone
        }
      }
    }
  }

  const shutdown = (signal: string) => {
    if (stopping && started) return;
    stopping = true;
    logger.info({ signal, workers: n }, 'shutting down');
    stopAll('SIGTERM');
    let clean = true;
    const killer = setTimeout(() => {
      clean = false;
      logger.warn({ timeoutMs: config.shutdownTimeoutMs + 5000 }, 'workers did not stop in time; killing them');
      stopAll('SIGKILL');
    }, config.shutdownTimeoutMs + 5000);
    killer.unref();
    const waits = slots.map((s) =>
      s.worker === undefined || s.worker.isDead()
        ? Promise.resolve()
        : new Promise<void>((r) =>
            s.worker!.once('exit', (code) => {
              if (code !== 0) clean = false;
              r();
            }),
          ),
    );
    void Promise.all(waits).then(() => {
      clearTimeout(killer);
      logger.info({}, 'stopped');
      process.exit(clean ? 0 : 1);
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));

  try {
    await startup;
  } catch (e) {
    if (e instanceof StartupFailed) {
      // The worker printed its own message; leave with its exit code once the others are gone.
      await Promise.all(slots.map((s) => (s.worker && !s.worker.isDead() ? new Promise((r) => s.worker!.once('exit', r)) : undefined)));
      process.exit(e.exitCode);
    }
    throw e;
  }
}

class StartupFailed extends Error {
  constructor(readonly exitCode: number) {
    super(`a worker failed to start (exit ${exitCode})`);
  }
}
