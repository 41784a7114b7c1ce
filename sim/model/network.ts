/**
 * The simulated network between a process and a store, shared by the
 * store's and the lease store's links: a call arrives after the link's
 * latency (or, the store unavailable, is refused after it); an answer
 * applied by the store may be lost (the driver's own timeout fails the call
 * after 2 s) or delayed past the caller's timeout (3-8 s), else it arrives
 * after the link's latency. Answers are events of the calling process
 * (dropped if it crashed, held while it is paused).
 */
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';

/** A store's faults, as the chaos phase sets and heals them. */
export interface NetworkFaults {
  unavailable: boolean;
  /** Probability that an applied operation's answer never reaches the caller. */
  loseAnswers: number;
  /** Probability that an answer arrives 3-8 s late. */
  delayAnswers: number;
}

/** A fault of the network to a store, on for `ms`: the store unreachable, or three answers in ten lost or delayed. */
export function networkFault(
  sched: Scheduler,
  f: NetworkFaults,
  fault: 'unavailable' | 'lose-answers' | 'delay-answers',
  ms: number,
): void {
  if (fault === 'unavailable') f.unavailable = true;
  else if (fault === 'lose-answers') f.loseAnswers = 0.3;
  else f.delayAnswers = 0.3;
  sched.after(ms, undefined, () => {
    if (fault === 'unavailable') f.unavailable = false;
    else if (fault === 'lose-answers') f.loseAnswers = 0;
    else f.delayAnswers = 0;
  });
}

/** Every network fault to a store ended (the heal). */
export function healNetwork(f: NetworkFaults): void {
  f.unavailable = false;
  f.loseAnswers = 0;
  f.delayAnswers = 0;
}

/** One process's connection to a store: every call crosses the simulated network both ways. */
export abstract class NetworkLink {
  constructor(
    protected readonly proc: Proc,
    protected readonly sched: Scheduler,
    private readonly rng: Prng,
    private readonly faults: NetworkFaults,
    /** The error a call fails with when it does not get through. */
    private readonly unavailable: (what: string) => Error,
  ) {}

  private latency(): number {
    return this.rng.chance(0.05) ? this.rng.int(5, 60) : 0.2 + this.rng.float() * 2;
  }

  /** Sends `op` to the store: applied when it arrives (`after` told what it returned there), answered (or not) later. */
  protected call<T>(op: () => Promise<T>, after?: (v: T) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.sched.after(this.latency(), undefined, () => {
        if (this.faults.unavailable) {
          this.sched.after(this.latency(), this.proc, () => reject(this.unavailable('unreachable')));
          return;
        }
        op().then(
          (v) => {
            after?.(v);
            this.answer(() => resolve(v), reject);
          },
          (e: unknown) => this.answer(() => reject(e), reject),
        );
      });
    });
  }

  private answer(deliver: () => void, reject: (e: unknown) => void): void {
    const f = this.faults;
    if (f.loseAnswers > 0 && this.rng.chance(f.loseAnswers)) {
      this.sched.after(2000, this.proc, () => reject(this.unavailable('answer lost (applied)')));
      return;
    }
    const late = f.delayAnswers > 0 && this.rng.chance(f.delayAnswers);
    this.sched.after(late ? this.rng.int(3000, 8000) : this.latency(), this.proc, deliver);
  }
}
