import { describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import type { SequoiaError } from '../core/errors.js';
import { type Id, MAX_ID } from '../core/id.js';
import { silentLogger } from '../core/silent-logger.js';
import { ControlledStore, ManualClock, tick } from '../../test/helpers/fakes.js';
import { BufferedTagAllocator } from './buffered-tag-allocator.js';
import { DEFAULT_ALLOCATOR_OPTIONS, type TagAllocatorOptions } from './tag-allocator.js';

async function setup(step = 100, options: Partial<TagAllocatorOptions> = {}, start?: bigint) {
  const store = new ControlledStore();
  await store.createTag({ tag: 't', step, start });
  const clock = new ManualClock();
  const marks = new MemoryHighWaterMarkStore();
  const make = () =>
    new BufferedTagAllocator('t', {
      store,
      marks,
      clock,
      logger: silentLogger,
      options: { ...DEFAULT_ALLOCATOR_OPTIONS, loadTimeoutMs: 200, minRetryDelayMs: 20, ...options },
    });
  return { store, clock, marks, alloc: make(), make };
}

async function codeOf(p: Id | Promise<Id> | Id[] | Promise<Id[]>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as SequoiaError).code;
  }
  return 'no error';
}

describe('BufferedTagAllocator', () => {
  it('loads lazily, then serves synchronously from the buffer', async () => {
    const { alloc, store } = await setup(100);
    expect(await alloc.next()).toBe(1);
    const v = alloc.next();
    expect(v).toBe(2); // not a promise
    expect(store.allocateCalls).toBe(1);
  });

  it('prefetches once when more than 10% is used, one load in flight', async () => {
    const { alloc, store } = await setup(100);
    await alloc.next(); // 1 used
    store.hold = true;
    for (let i = 0; i < 9; i++) alloc.next(); // 10 used
    expect(store.allocateCalls).toBe(1);
    alloc.next(); // 11 used: more than 10%
    await tick(); // the load reads the marks first (asynchronously), then asks the store
    expect(store.allocateCalls).toBe(2);
    for (let i = 0; i < 50; i++) alloc.next();
    expect(store.allocateCalls).toBe(2);
    await store.release();
    await tick();
    const snap = alloc.snapshot();
    expect(snap.nextReady).toBe(true);
    expect(snap.next).toEqual({ start: 101n, end: 301n }); // the step doubled (loaded < 15 min apart)
  });

  it('many concurrent callers wait on one in-flight load and get distinct IDs', async () => {
    const { alloc, store } = await setup(10);
    store.hold = true;
    const waiting = Array.from({ length: 25 }, () => alloc.next());
    await tick();
    expect(store.allocateCalls).toBe(1);
    while (store.pending.length) {
      await store.release();
      await tick();
    }
    // 25 callers need three segments (10, 20, ...): each load is single-flight
    for (let i = 0; i < 5 && store.pending.length === 0; i++) await tick();
    while (store.pending.length) {
      await store.release();
      await tick();
    }
    const ids = await Promise.all(waiting);
    expect(new Set(ids).size).toBe(25);
    expect(store.allocateCalls).toBeLessThanOrEqual(3);
  });

  it('a failed load gives SEGMENTS_EXHAUSTED with a retry delay, then recovers', async () => {
    const { alloc, store, clock } = await setup(10);
    store.down = true;
    const err = await Promise.resolve(alloc.next()).then(
      () => undefined,
      (e: SequoiaError) => e,
    );
    expect(err?.code).toBe('SEGMENTS_EXHAUSTED');
    // within the backoff no new store call is made
    const calls = store.allocateCalls;
    try {
      await alloc.next();
    } catch (e) {
      expect((e as SequoiaError).code).toBe('SEGMENTS_EXHAUSTED');
      expect((e as SequoiaError).retryAfterMs).toBeGreaterThan(0);
    }
    expect(store.allocateCalls).toBe(calls);
    store.down = false;
    clock.advance(1000);
    expect(await alloc.next()).toBe(1);
  });

  it('keeps serving the current segment while the store is down, then fails only when both are empty', async () => {
    const { alloc, store, clock } = await setup(10);
    await alloc.next();
    store.down = true;
    const got: Id[] = [];
    for (let i = 0; i < 9; i++) got.push(await alloc.next());
    expect(got).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await codeOf(alloc.next())).toBe('SEGMENTS_EXHAUSTED');
    store.down = false;
    clock.advance(10_000);
    expect(await alloc.next()).toBe(11);
  });

  it('both segments empty and the store hanging: SEGMENTS_EXHAUSTED after the load timeout', async () => {
    const { alloc, store } = await setup(5, { loadTimeoutMs: 50 });
    store.hold = true;
    const t0 = Date.now();
    expect(await codeOf(alloc.next())).toBe('SEGMENTS_EXHAUSTED');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    // the load still lands later and serves
    await store.release();
    await tick();
    expect(alloc.next()).toBe(1);
  });

  it('nextMany is all or nothing and spans several loads', async () => {
    const { alloc, store } = await setup(3);
    const ids = await alloc.nextMany(20);
    expect(ids.length).toBe(20);
    expect(new Set(ids).size).toBe(20);
    store.down = true;
    expect(await codeOf(alloc.nextMany(10_000))).toBe('SEGMENTS_EXHAUSTED');
  });

  it('detects a rolled-back store, keeps refusing across restarts, and serves again after a fence', async () => {
    const { alloc, store, make, marks } = await setup(10);
    await alloc.nextMany(15); // two segments handed out: [1,11) [11,31)
    alloc.close();
    store.restore('t', 1n); // the store goes back in time
    const restarted = make();
    expect(await codeOf(restarted.next())).toBe('STORE_ROLLBACK_DETECTED');
    // the store moving on does not clear it: the guard needs the operator
    store.restore('t', 10_000n);
    const again = make();
    expect(await codeOf(again.next())).toBe('STORE_ROLLBACK_DETECTED');
    expect((await marks.get('t'))?.trippedAtEpoch).toBe(0);
    await store.fence('t', 20_000n);
    await marks.put('t', { mark: (await marks.get('t'))!.mark });
    const fenced = make();
    expect(await fenced.next()).toBe(20_000);
  });

  it('a refused tag re-reads its fence epoch at most once a second, allocates nothing meanwhile, and reopens after a fence made elsewhere', async () => {
    const { alloc: before, store, clock, make } = await setup(10);
    await before.nextMany(15);
    before.close();
    store.restore('t', 1n);
    const alloc = make();
    expect(await codeOf(alloc.next())).toBe('STORE_ROLLBACK_DETECTED');
    let reads = 0;
    const getTag = store.getTag.bind(store);
    store.getTag = (tag: string) => {
      reads++;
      return getTag(tag);
    };
    const allocations = store.allocateCalls;
    for (let i = 0; i < 50; i++) expect(await codeOf(alloc.next())).toBe('STORE_ROLLBACK_DETECTED');
    expect(reads).toBeLessThanOrEqual(1);
    clock.advance(1000);
    for (let i = 0; i < 50; i++) expect(await codeOf(alloc.next())).toBe('STORE_ROLLBACK_DETECTED');
    expect(reads).toBeLessThanOrEqual(2);
    expect(store.allocateCalls).toBe(allocations);
    // a fence by someone else (CLI, another worker or server): no call on this allocator
    await store.fence('t', 20_000n);
    clock.advance(1000);
    expect(await alloc.next()).toBe(20_000);
  });

  it('never wraps at 2^63-1', async () => {
    const { alloc } = await setup(2, {}, MAX_ID - 4n);
    const ids = await alloc.nextMany(4);
    expect(ids).toEqual([MAX_ID - 4n, MAX_ID - 3n, MAX_ID - 2n, MAX_ID - 1n]);
    expect(await codeOf(alloc.next())).toBe('ID_SPACE_EXHAUSTED');
  });
});

describe('BufferedTagAllocator on a multi-store set', () => {
  it('serves strided segments from every store, with one high-water mark per residue class, and no repeats', async () => {
    const { MultiSegmentStore } = await import('../adapters/multi/multi-segment-store.js');
    const { MemorySegmentStore } = await import('../adapters/memory/memory-segment-store.js');
    const members = [new MemorySegmentStore(), new MemorySegmentStore(), new MemorySegmentStore()];
    const store = new MultiSegmentStore(members);
    await store.init();
    await store.createTag({ tag: 't', step: 4 });
    const marks = new MemoryHighWaterMarkStore();
    const alloc = new BufferedTagAllocator('t', {
      store,
      marks,
      clock: new ManualClock(),
      logger: silentLogger,
      options: { ...DEFAULT_ALLOCATOR_OPTIONS, maxStep: 4 },
    });
    const ids = (await alloc.nextMany(200)).map(Number);
    expect(new Set(ids).size).toBe(200);
    expect(new Set(ids.map((v) => v % 3))).toEqual(new Set([0, 1, 2]));
    // stores drift apart: only one class's mark moves with each answer, and nothing trips
    expect(alloc.snapshot().refusing).toBeUndefined();
    expect((await marks.get('t#3:0'))?.mark).toBeDefined();
    expect((await marks.get('t'))?.mark).toBeGreaterThan(BigInt(Math.max(...ids)));
  });
});
