/**
 * The lease provider and the multi-store take time, timers and randomness
 * from injected ports (issue 42), so a simulated scheduler can drive them:
 * nothing here waits on node's timers or reads the real clock.
 */
import { describe, expect, it } from 'vitest';
import { MemoryWorkerLeaseStore } from '../memory/memory-worker-lease-store.js';
import { MemorySegmentStore } from '../memory/memory-segment-store.js';
import { MultiSegmentStore } from '../multi/multi-segment-store.js';
import { UnavailableError } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import { ManualClock, tick } from '../../../test/helpers/fakes.js';
import { ManualTimers } from '../../../test/helpers/manual-timers.js';
import { LeaseWorkerIdProvider } from './lease-worker-id-provider.js';

const space = { key: 'k', workerCount: 1, unitMs: 1, label: 'one' };
const sevens: Random = { fill: (b) => b.fill(0x77) };

describe('LeaseWorkerIdProvider on injected ports', () => {
  it("waits for a held id on the port's timer and the clock's deadline; its owner's random part comes from Random", async () => {
    const clock = new ManualClock();
    const timers = new ManualTimers();
    const store = new MemoryWorkerLeaseStore(() => clock.now());
    const holder = new LeaseWorkerIdProvider(store, { ttlMs: 1000, clock, timers, random: sevens });
    expect(holder.owner).toMatch(/\/77777777$/);
    const first = await holder.acquire(space);
    expect(first.validUntil).toBe(clock.monotonic() + 1000 - 200); // on the injected monotonic clock

    const waiter = new LeaseWorkerIdProvider(store, { ttlMs: 1000, owner: 'waiter', acquireWaitMs: 5000, clock, timers });
    let got: number | undefined;
    const p = waiter.acquire(space).then((g) => (got = g.workerId));
    while (timers.pending('after').length === 0) await tick();
    expect(timers.pending('after').map((t) => t.ms)).toEqual([250]); // not node's setTimeout
    clock.advance(1001); // the holder's lease runs out (store clock = the injected clock)
    timers.fire();
    await p;
    expect(got).toBe(0);
  });
});

describe('MultiSegmentStore on an injected clock', () => {
  it("a failed member's cooldown runs on the clock's monotonic reading", async () => {
    const clock = new ManualClock();
    const a = new MemorySegmentStore();
    const b = new MemorySegmentStore();
    let bDown = true;
    const alloc = b.allocate.bind(b);
    b.allocate = (tag, step) => (bDown ? Promise.reject(new UnavailableError('STORE_UNAVAILABLE', 'down (test)')) : alloc(tag, step));
    const m = new MultiSegmentStore([a, b], { downCooldownMs: 5000, clock });
    await m.init();
    await m.createTag({ tag: 't', step: 10 });
    const offsets: number[] = [];
    for (let i = 0; i < 4; i++) offsets.push((await m.allocate('t')).offset ?? 0);
    expect(offsets).toEqual([0, 0, 0, 0]); // b failed once, then is passed over while cooling
    bDown = false;
    clock.step(10_000); // a wall clock step does not end the cooldown
    expect((await m.allocate('t')).offset).toBe(0);
    clock.advance(5000);
    const after = new Set<number>();
    for (let i = 0; i < 4; i++) after.add((await m.allocate('t')).offset ?? 0);
    expect(after).toEqual(new Set([0, 1]));
  });
});
