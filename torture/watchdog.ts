/**
 * A deadline the run cannot escape. It lives in a worker thread: a loop on
 * the main thread that never yields stops every timer of that thread (a
 * short run once printed PASS and then spun on one core for 45 minutes),
 * but not this one. When a deadline passes it writes why to stderr, kills
 * the processes the run started, and kills the run itself with SIGKILL, so
 * the run always ends, and never with status 0.
 */
import { Worker } from 'node:worker_threads';

type Message = { readonly arm: number; readonly why: string } | { readonly pids: readonly number[] } | { readonly disarm: true };

const WATCHER = `
const { parentPort } = require('node:worker_threads');
const { writeSync } = require('node:fs');
let timer;
let pids = [];
parentPort.on('message', (m) => {
  if (m.pids) { pids = m.pids; return; }
  clearTimeout(timer);
  if (m.disarm) return;
  timer = setTimeout(() => {
    writeSync(2, 'torture: watchdog: ' + m.why + '; forcing the run to end (exit by SIGKILL)\\n');
    for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch {} }
    process.kill(process.pid, 'SIGKILL');
  }, m.arm);
});
`;

export class Watchdog {
  private readonly worker: Worker;

  constructor() {
    this.worker = new Worker(WATCHER, { eval: true });
    // The watchdog never keeps a finished run alive.
    this.worker.unref();
  }

  /** (Re)starts the deadline: `why` is printed when `ms` pass before the next arm or disarm. */
  arm(ms: number, why: string): void {
    this.post({ arm: ms, why });
  }

  disarm(): void {
    this.post({ disarm: true });
  }

  /** The processes to kill with the run (the reaper's list, kept current). */
  watch(pids: readonly number[]): void {
    this.post({ pids: [...pids] });
  }

  private post(m: Message): void {
    this.worker.postMessage(m);
  }
}
