/**
 * The way back over the simulated network, shared by the store's and the
 * lease store's links: an answer applied by the store may be lost (the
 * driver's own timeout fails the call after 2 s) or delayed past the
 * caller's timeout (3-8 s), else it arrives after the link's latency.
 */
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';

export interface AnswerFaults {
  readonly loseAnswers: number;
  readonly delayAnswers: number;
}

export function sendAnswer(
  link: { readonly sched: Scheduler; readonly proc: Proc; readonly rng: Prng; latency(): number },
  f: AnswerFaults,
  deliver: () => void,
  lost: () => void,
): void {
  if (f.loseAnswers > 0 && link.rng.chance(f.loseAnswers)) {
    link.sched.after(2000, link.proc, lost);
    return;
  }
  const late = f.delayAnswers > 0 && link.rng.chance(f.delayAnswers);
  link.sched.after(late ? link.rng.int(3000, 8000) : link.latency(), link.proc, deliver);
}
