/**
 * The primary of `serve --workers N` (cluster.ts describes the whole): it
 * forks one worker per slot, answers their messages, replaces a worker that
 * dies, and drains every worker on SIGTERM/SIGINT/SIGHUP.
 */
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { type Logger, pino } from 'pino';
import { redactStoreUrl } from './stores.js';
import { bindStateDir, claimStateDir } from './state-dir-claim.js';
import { type ServeConfig, checkAdminExposure } from './config.js';
import type { PrimaryMessage, WorkerMessage } from './cluster.js';
import { VERSION } from '../version.js';
import { handleGatherInPrimary } from '../server/cluster-gather.js';
import { reservePort } from '../server/listen-check.js';

interface Slot {
  worker: Worker | undefined;
  /** Monotonic ms (performance.now) of the last fork. */
  startedAt: number;
  ready: boolean;
  /** Consecutive young deaths: the restart delay doubles with each. */
  failures: number;
  timer: NodeJS.Timeout | undefined;
}

interface Primary {
  readonly config: ServeConfig;
  /** The config every worker gets: the port the primary checked (the OS's choice for port 0). */
  readonly shared: ServeConfig;
  readonly logger: Logger;
  readonly slots: Slot[];
  started: boolean;
  stopping: boolean;
  url: string;
  /** Settle the start: once every worker is ready, or at the first that fails to start. */
  onStarted: () => void;
  onStartFailed: (e: StartupFailed) => void;
}

/** A worker that dies young is replaced after 100 ms, doubling per consecutive young death up to 30 s. */
export function restartDelayMs(failures: number): number {
  return Math.min(30_000, 100 * 2 ** Math.max(0, failures - 1));
}

/** A worker that lived past 30 s resets the count of young deaths. */
export function youngDeaths(previous: number, livedMs: number): number {
  return livedMs > 30_000 ? 0 : previous + 1;
}

export async function runPrimary(config: ServeConfig, n: number): Promise<void> {
  // No admin token beyond loopback: refused before a port, a worker or a lease is taken; workers do not ask again.
  const openAdmin = checkAdminExposure(config);
  const logger = pino({ level: config.logLevel, base: { pid: process.pid, role: 'primary' } });
  if (openAdmin !== undefined) logger.warn({ host: config.host }, openAdmin);
  // Node reports trouble with the connections it hands to workers (e.g. SentHandleNotReceivedWarning) as process warnings: log them.
  process.on('warning', (w) => logger.warn({ warning: w.name, err: w.message }, 'node warning'));
  // Checked before any worker starts (and leases anything): a port in use is one line, not one per worker.
  const probe = await reservePort(config.host, config.port);
  await probe.release();
  // The state dir is this server's for the primary's life (workers share it, nothing else may). A dir of another store is
  // refused here; the workers bind an unbound one once their store has started.
  await bindStateDir(config.stateDir, config.store, false);
  claimStateDir(config.stateDir, config.store);
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./cluster-worker.js', import.meta.url)), args: [] });
  const p: Primary = {
    config,
    shared: { ...config, port: probe.port },
    logger,
    slots: Array.from({ length: n }, () => ({ worker: undefined, startedAt: 0, ready: false, failures: 0, timer: undefined })),
    started: false,
    stopping: false,
    url: '',
    onStarted: () => undefined,
    onStartFailed: () => undefined,
  };
  const startup = new Promise<void>((resolve, reject) => {
    p.onStarted = resolve;
    p.onStartFailed = reject;
    for (let i = 0; i < n; i++) fork(p, i);
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, () => shutdown(p, signal));
  try {
    await startup;
  } catch (e) {
    if (e instanceof StartupFailed) {
      // The worker printed its own message; leave with its exit code once the others are gone.
      await Promise.all(p.slots.map((s) => (s.worker && !s.worker.isDead() ? new Promise((r) => s.worker!.once('exit', r)) : undefined)));
      process.exit(e.exitCode);
    }
    throw e;
  }
}

function fork(p: Primary, i: number): void {
  const slot = p.slots[i]!;
  slot.timer = undefined;
  const w = cluster.fork({ SEQUOIA_WORKER_SLOT: String(i) });
  slot.worker = w;
  slot.ready = false;
  slot.startedAt = performance.now();
  w.on('message', (m: WorkerMessage) => onMessage(p, i, w, m));
  w.on('exit', (code: number | null, signal: string | null) => onExit(p, i, w, code, signal));
}

function onMessage(p: Primary, i: number, w: Worker, m: WorkerMessage): void {
  if (handleGatherInPrimary(w, m, () => p.slots.flatMap((s) => (s.worker && s.ready ? [s.worker] : [])))) return;
  if (m.type === 'need-config') {
    // The slot travels one way only: SEQUOIA_WORKER_SLOT, set at fork (the worker reads it with workerSlot()).
    const msg: PrimaryMessage = { type: 'config', config: p.shared };
    w.send(msg);
  } else if (m.type === 'ready') {
    onReady(p, i, m);
  }
}

function onReady(p: Primary, i: number, m: Extract<WorkerMessage, { type: 'ready' }>): void {
  p.slots[i]!.ready = true;
  p.url ||= m.url;
  if (p.started) {
    p.logger.info({ slot: i, workerPid: m.pid }, 'worker replaced');
  } else if (p.slots.every((s) => s.ready)) {
    p.started = true;
    const { config } = p;
    p.logger.info(
      {
        url: p.url,
        workers: p.slots.length,
        workerPids: p.slots.map((s) => s.worker?.process.pid),
        store: redactStoreUrl(config.store),
        stateDir: config.stateDir,
        version: VERSION,
      },
      'listening',
    );
    p.onStarted();
  }
}

function onExit(p: Primary, i: number, w: Worker, code: number | null, signal: string | null): void {
  const slot = p.slots[i]!;
  if (slot.worker !== w) return;
  slot.worker = undefined;
  const lived = performance.now() - slot.startedAt;
  if (p.stopping) return;
  if (!p.started) {
    // A worker that cannot start (bad store, port taken) fails the whole start, like one process would.
    p.logger.error({ slot: i, workerPid: w.process.pid, code, signal }, 'worker failed to start');
    p.stopping = true;
    stopAll(p.slots, 'SIGTERM');
    p.onStartFailed(new StartupFailed(typeof code === 'number' && code > 0 ? code : 1));
    return;
  }
  slot.failures = youngDeaths(slot.failures, lived);
  const delay = restartDelayMs(slot.failures);
  p.logger.warn({ slot: i, workerPid: w.process.pid, code, signal, restartInMs: delay }, 'worker exited; replacing it');
  slot.timer = setTimeout(() => fork(p, i), delay);
}

function stopAll(slots: readonly Slot[], signal: NodeJS.Signals): void {
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

/** Drains every worker; exits 0 when all stopped cleanly, 1 if one failed or had to be killed. */
function shutdown(p: Primary, signal: string): void {
  if (p.stopping && p.started) return;
  p.stopping = true;
  const { logger, config } = p;
  logger.info({ signal, workers: p.slots.length }, 'shutting down');
  stopAll(p.slots, 'SIGTERM');
  let clean = true;
  const killer = setTimeout(
    () => {
      clean = false;
      logger.warn({ timeoutMs: config.drainDelayMs + config.shutdownTimeoutMs + 5000 }, 'workers did not stop in time; killing them');
      stopAll(p.slots, 'SIGKILL');
    },
    config.drainDelayMs + config.shutdownTimeoutMs + 5000,
  );
  killer.unref();
  void exitCodesClean(p.slots).then((allClean) => {
    clearTimeout(killer);
    logger.info({}, 'stopped');
    process.exit(clean && allClean ? 0 : 1);
  });
}

/** Resolves once every live worker has exited: whether each exited 0. */
async function exitCodesClean(slots: readonly Slot[]): Promise<boolean> {
  const codes = await Promise.all(
    slots.map((s) =>
      s.worker === undefined || s.worker.isDead()
        ? Promise.resolve(0)
        : new Promise<number | null>((r) => s.worker!.once('exit', (code: number | null) => r(code))),
    ),
  );
  return codes.every((c) => c === 0);
}

class StartupFailed extends Error {
  constructor(readonly exitCode: number) {
    super(`a worker failed to start (exit ${exitCode})`);
  }
}
