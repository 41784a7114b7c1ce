/**
 * Worker threads started before anyone knows what they will host. Booting a
 * thread (a fresh isolate, the entry's modules, better-sqlite3's addon) is
 * most of what opening the state dir and a SQLite store costs a start. The
 * bin starts them as soon as it sees `serve`, so they boot on the other core
 * while the main thread loads the command table, the config and the HTTP
 * side; `OffLoopHost.start` then hands one its factory instead of booting a
 * new thread.
 *
 * The bin and the server's modules are separate bundles (each with its own
 * copy of this module), so the pool is the process's, under a global symbol.
 * A warm thread never keeps the process alive, and one nobody claims is
 * ended by `discardWarmThreads` (or by the process's exit).
 */
import type { Worker } from 'node:worker_threads';

interface WarmThread {
  readonly entry: string;
  readonly worker: Worker;
  gone: boolean;
}

const POOL = Symbol.for('sequoia.offLoop.warmThreads');

function pool(): WarmThread[] {
  const g = globalThis as { [POOL]?: WarmThread[] };
  return (g[POOL] ??= []);
}

/** What a warm thread is told to make once claimed. */
export interface MakeMessage {
  readonly t: 'make';
  readonly factory: string;
  readonly args: unknown;
}

/** The workerData of a thread that waits for its `make` message. */
const WARM = { warm: true } as const;

/** Starts `count` threads on `entry` (a module calling serveOffLoop), each waiting to be told what to host. */
export function startWarmThreads(entry: URL, count: number): void {
  // Asked for here, not imported: the bin carries this module, and `sequoia gen uuid` must not load worker_threads.
  const { Worker } = process.getBuiltinModule('node:worker_threads');
  for (let i = 0; i < count; i++) {
    const worker = new Worker(entry, { workerData: WARM });
    worker.unref();
    const t: WarmThread = { entry: entry.href, worker, gone: false };
    // A thread that fails to boot (an addon that will not load) is left for a fresh start to report.
    worker.once('error', () => (t.gone = true));
    worker.once('exit', () => (t.gone = true));
    pool().push(t);
  }
}

/** A booting or booted thread on `entry`, taken out of the pool; undefined when there is none. */
export function takeWarmThread(entry: URL): Worker | undefined {
  const threads = pool();
  const i = threads.findIndex((t) => t.entry === entry.href && !t.gone);
  if (i < 0) return undefined;
  const [t] = threads.splice(i, 1);
  return t?.worker;
}

/** Ends the threads nobody claimed (a start that needed fewer than the bin guessed). */
export function discardWarmThreads(): void {
  for (const t of pool().splice(0)) void t.worker.terminate();
}
