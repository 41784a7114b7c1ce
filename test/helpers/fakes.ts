/** Test-only fakes for the pure core and the service: a manual clock and a store the test drives. */
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import { UnavailableError } from '../../src/core/errors.js';
import type { Clock } from '../../src/core/clock.js';
import type { Allocation } from '../../src/ports/segment-store.js';

/**
 * A clock the test moves: `advance` lets time pass (wall and monotonic
 * readings together); `step` (or setting `t`) moves only the wall clock, as
 * NTP or an operator setting the clock does.
 */
export class ManualClock implements Clock {
  /** The monotonic reading (ms, arbitrary origin). */
  m = 0;
  constructor(public t = 1_700_000_000_000) {}
  now(): number {
    return this.t;
  }
  monotonic(): number {
    return this.m;
  }
  advance(ms: number): void {
    this.t += ms;
    this.m += ms;
  }
  /** The wall clock is set (stepped) by `ms`, forward or back; monotonic time does not move. */
  step(ms: number): void {
    this.t += ms;
  }
}

interface Pending {
  tag: string;
  step: number | undefined;
  resolve: (a: Allocation) => void;
  reject: (e: unknown) => void;
}

/**
 * A memory store whose allocations the test controls: in `hold` mode each
 * allocate waits until the test releases or fails it; `down` makes every call
 * fail like an unreachable server.
 */
export class ControlledStore extends MemorySegmentStore {
  hold = false;
  down = false;
  allocateCalls = 0;
  readonly pending: Pending[] = [];

  override async allocate(tag: string, step?: number): Promise<Allocation> {
    this.allocateCalls++;
    if (this.down) throw new UnavailableError('STORE_UNAVAILABLE', 'store is down (test)');
    if (!this.hold) return super.allocate(tag, step);
    return new Promise<Allocation>((resolve, reject) => this.pending.push({ tag, step, resolve, reject }));
  }

  /** Completes the oldest held allocation against the real memory rows. */
  async release(): Promise<void> {
    const p = this.pending.shift();
    if (!p) throw new Error('nothing held');
    try {
      p.resolve(await super.allocate(p.tag, p.step));
    } catch (e) {
      p.reject(e);
    }
  }

  /** Fails the oldest held allocation. */
  fail(): void {
    const p = this.pending.shift();
    if (!p) throw new Error('nothing held');
    p.reject(new UnavailableError('STORE_UNAVAILABLE', 'store failed (test)'));
  }

  override async ping(): Promise<void> {
    if (this.down) throw new UnavailableError('STORE_UNAVAILABLE', 'store is down (test)');
  }
}

export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
