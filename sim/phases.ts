/**
 * The phases every chaos world of a seed runs (run.ts, run-snowflake.ts,
 * worlds.ts): requests arrive in bursts over the whole run; faults and
 * operator actions are drawn until `chaosMs`; then everything heals, each
 * worker is probed every half second from 2 s later, and at the end (unless
 * a finding stopped the run) every worker must have answered again.
 */
import type { Prng } from './engine/prng.js';
import type { Scheduler } from './engine/scheduler.js';
import type { Checker } from './model/checker.js';
import type { World, WorldResult } from './worlds.js';

export interface Phases {
  readonly chaosMs: number;
  readonly healMs: number;
  /** Client requests: bursts of 2-8 a tenth of the time, else one, `gapMs` apart on average. */
  readonly traffic?: { readonly rng: Prng; readonly gapMs: number; request(): void };
  /** The seed's stream of fault draws (the gaps between them). */
  readonly faults: Prng;
  /** The gap between draws: `[min, spread]`, min + spread * a uniform draw, ms. */
  readonly gapMs: readonly [number, number];
  chaos(): void;
  /** Taken every second of the chaos phase (what a store restore goes back to). */
  snapshot?(): void;
  heal(): void;
  probe(): void;
  failed(): boolean;
  checkLiveness(): void;
}

/** Runs the phases on `sched` to their end; returns the number of fault draws. */
export async function runPhases(sched: Scheduler, p: Phases): Promise<number> {
  const { chaosMs, healMs, traffic } = p;
  if (traffic) {
    const arrive = (): void => {
      const burst = traffic.rng.chance(0.1) ? traffic.rng.int(2, 8) : 1;
      for (let i = 0; i < burst; i++) traffic.request();
      if (sched.now < chaosMs + healMs) sched.after(traffic.rng.float() * 2 * traffic.gapMs, undefined, arrive);
    };
    sched.after(0, undefined, arrive);
  }
  let draws = 0;
  const chaos = (): void => {
    draws++;
    p.chaos();
    const next = sched.now + p.gapMs[0] + p.faults.float() * p.gapMs[1];
    if (next < chaosMs) sched.at(next, undefined, chaos);
  };
  sched.after(500, undefined, chaos);
  const snapshot = p.snapshot?.bind(p);
  if (snapshot) {
    const snap = (): void => {
      snapshot();
      if (sched.now < chaosMs) sched.after(1000, undefined, snap);
    };
    sched.after(0, undefined, snap);
  }
  sched.at(chaosMs, undefined, () => p.heal());
  const probe = (): void => {
    p.probe();
    if (sched.now < chaosMs + healMs - 500) sched.after(500, undefined, probe);
  };
  sched.at(chaosMs + 2000, undefined, probe);
  const stop = (): boolean => p.failed();
  await sched.run(chaosMs + healMs, () => {}, stop);
  if (!stop()) p.checkLiveness();
  return draws;
}

/** What a world after the cluster's reports (worlds.ts): its checker's verdict and count, its trace and coverage, its scheduler's totals. */
export function worldResult(
  world: World,
  sched: Scheduler,
  w: { readonly checker: Checker; readonly coverage: ReadonlyMap<string, number> },
  faults: number,
  answered = w.checker.answered,
): WorldResult {
  return {
    world,
    findings: w.checker.findings,
    trace: sched.trace,
    coverage: w.coverage,
    events: sched.events,
    simMs: sched.now,
    answered,
    faults,
  };
}
