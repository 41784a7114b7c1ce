/**
 * The process lifecycle the segment cluster (cluster.ts) and the snowflake
 * world (snowflake-world.ts) share: a server's worker processes crash
 * together and start again, pause and resume, close cleanly and start again
 * (alone, or one after another in a rolling restart). Each world boots a
 * worker its own way; when and in what order that happens is the same rule,
 * kept here once.
 */
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';

export interface LifeWorker {
  proc: Proc;
  service: { close(): Promise<void> } | undefined;
  state: 'starting' | 'up' | 'closing' | 'down';
}

export interface LifeServer<W extends LifeWorker> {
  readonly name: string;
  readonly workers: W[];
}

export class Lifecycle<S extends LifeServer<W>, W extends LifeWorker> {
  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    private readonly servers: readonly S[],
    /** Starts a worker in a fresh process. */
    private readonly boot: (s: S, w: W) => void,
    /** Counts an operator action of its own (a clean restart within a rolling one is not counted). */
    private readonly count: (action: 'clean-restart' | 'rolling-restart') => void,
  ) {}

  /**
   * Every process of the server dies at once; `dir` then does to the state
   * dir what the crash does (given the processes that died), and the server
   * starts again 0.2-4 s later.
   */
  crash(s: S, dir: (procs: Proc[]) => void): void {
    const procs = s.workers.map((w) => w.proc);
    for (const w of s.workers) {
      w.proc.alive = false;
      w.state = 'down';
      w.service = undefined;
    }
    dir(procs);
    this.sched.after(this.rng.int(200, 4000), undefined, () => {
      this.sched.log(`restart ${s.name}`);
      for (const w of s.workers) this.boot(s, w);
    });
  }

  /** The server's running processes, paused (SIGSTOP) for `ms` (drawn once some are); false when none runs. */
  pause(s: S, ms: () => number, fault: string): boolean {
    const procs = s.workers.filter((w) => w.state !== 'down' && !w.proc.paused).map((w) => w.proc);
    if (procs.length === 0) return false;
    const wait = ms();
    this.sched.log(fault);
    for (const p of procs) p.paused = true;
    this.sched.after(wait, undefined, () => {
      this.sched.log(`resume ${s.name}`);
      // The heal may have resumed it already.
      for (const p of procs) if (p.paused) this.sched.resume(p);
    });
    return true;
  }

  /**
   * One worker (`worker`, or one drawn) closes cleanly, giving back what it
   * holds, and starts again (unless it is not up to do it).
   */
  cleanRestart(s: S, worker?: W): void {
    const w = worker ?? this.rng.pick(s.workers);
    if (w.state !== 'up' || w.proc.paused || !w.service) return;
    if (!worker) this.count('clean-restart');
    this.sched.log(`OP clean-restart ${w.proc.name}`);
    w.state = 'closing';
    const proc = w.proc;
    const done = (): void => {
      if (w.proc !== proc || !proc.alive) return;
      proc.alive = false;
      this.boot(s, w);
    };
    w.service.close().then(done, done);
  }

  /** Every worker of every server restarted cleanly, one after another. */
  rollingRestart(): void {
    this.count('rolling-restart');
    this.sched.log('OP rolling-restart');
    let at = 0;
    for (const s of this.servers) {
      for (const w of s.workers) {
        at += this.rng.int(100, 1500);
        this.sched.after(at, undefined, () => this.cleanRestart(s, w));
      }
    }
  }
}
