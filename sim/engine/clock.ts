/**
 * A host's clocks on simulated time: the wall clock is true time plus an
 * offset an NTP step (either way, up to a day) can change, and can be frozen;
 * the monotonic clock never steps (it keeps running through a freeze of the
 * wall clock, as CLOCK_MONOTONIC does).
 */
import type { Scheduler } from './scheduler.js';

/** 2026-01-01T00:00:00Z: the simulated epoch's wall time. */
const WALL_ORIGIN = 1_767_225_600_000;

export class HostClock {
  offsetMs = 0;
  frozenAt: number | undefined;
  constructor(
    private readonly sched: Scheduler,
    private readonly monoOrigin: number,
  ) {}

  now(): number {
    return this.frozenAt ?? Math.floor(WALL_ORIGIN + this.sched.now + this.offsetMs);
  }

  monotonic(): number {
    return this.monoOrigin + this.sched.now;
  }

  step(ms: number): void {
    this.offsetMs += ms;
  }

  freeze(): void {
    this.frozenAt = this.now();
  }

  thaw(): void {
    this.frozenAt = undefined;
  }
}
