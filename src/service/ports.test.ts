/**
 * The service takes time, timers and randomness only from its ports (issue
 * 42): a simulated scheduler injects them and decides when each timer fires.
 * Each test drives a class through a ManualTimers and checks the timer was
 * asked of the port (nothing fires by itself) and does its work when fired.
 */
import { describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { MemoryWorkerLeaseStore } from '../adapters/memory/memory-worker-lease-store.js';
import type { Random } from '../core/random.js';
import { ControlledStore, ManualClock, tick } from '../../test/helpers/fakes.js';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { FallbackLeases } from './fallback-leases.js';
import { IdService } from './id-service.js';

async function service(o: { strictTags?: string[]; refreshIntervalMs?: number } = {}) {
  const store = new ControlledStore();
  const timers = new ManualTimers();
  const clock = new ManualClock();
  const s = new IdService({
    store,
    marks: new MemoryHighWaterMarkStore(),
    clock,
    timers,
    refreshIntervalMs: o.refreshIntervalMs ?? 0,
    allocator: { minRetryDelayMs: 40, maxRetryDelayMs: 40 },
    ...(o.strictTags ? { strictTags: o.strictTags } : {}),
  });
  await s.start();
  return { store, timers, clock, s };
}

describe('IdService on injected timers', () => {
  it('the tag-list refresh runs on the port (every refreshIntervalMs, unref) and close() clears it', async () => {
    const { store, timers, s } = await service({ refreshIntervalMs: 60_000 });
    const [refresh, ...rest] = timers.pending('every');
    expect(rest).toEqual([]);
    expect(refresh).toMatchObject({ ms: 60_000, unrefed: true });
    await store.createTag({ tag: 'late' });
    expect(s.isKnown('late')).toBe(false);
    timers.fire((t) => t === refresh);
    await tick();
    expect(s.isKnown('late')).toBe(true);
    await s.close();
    expect(timers.pending('every')).toEqual([]);
  });

  it("a failed load's retry waits for the port's timer, not node's", async () => {
    const { store, timers, clock, s } = await service();
    await store.createTag({ tag: 'a' });
    store.down = true;
    await expect(Promise.resolve(s.next('a'))).rejects.toMatchObject({ code: 'SEGMENTS_EXHAUSTED' });
    const retry = timers.pending('after').find((t) => t.ms === 40);
    expect(retry).toMatchObject({ unrefed: true });
    store.down = false;
    clock.advance(40);
    const calls = store.allocateCalls;
    timers.fire((t) => t === retry); // re-arms the buffer: the next take loads
    expect(await s.next('a')).toBe(1);
    expect(store.allocateCalls).toBeGreaterThan(calls);
    await s.close();
  });

  it("a strict tag's batch is sent when the port fires the end of the turn", async () => {
    const { store, timers, s } = await service({ strictTags: ['seq'] });
    await store.createTag({ tag: 'seq' });
    const a = await s.allocator('seq');
    const calls = store.allocateCalls;
    const p1 = a.next();
    const p2 = a.next();
    for (let i = 0; i < 5; i++) await tick();
    expect(store.allocateCalls).toBe(calls); // nothing sent: the port has not fired
    const turn = timers.pending('after').filter((t) => t.ms === 0);
    expect(turn).toHaveLength(1); // one batch for both requests
    timers.fire((t) => t === turn[0]);
    expect([await p1, await p2]).toEqual([1, 2]);
    expect(store.allocateCalls).toBe(calls + 1);
    await s.close();
  });
});

describe('FallbackLeases on an injected Random', () => {
  it("each owner's unique part comes from the Random", async () => {
    const zeros: Random = { fill: (b) => b.fill(0) };
    const f = new FallbackLeases({
      tags: ['fb'],
      ttlMs: 60_000,
      leases: () => new MemoryWorkerLeaseStore(() => 1_800_000_000_000),
      random: zeros,
    });
    const a = await f.lease('fb', {}, 'addr:10.0.0.1');
    expect(a.owner).toBe('addr:10.0.0.1/00000000-0000-4000-8000-000000000000');
  });
});
