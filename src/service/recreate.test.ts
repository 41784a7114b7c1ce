/**
 * A tag deleted and created again is another tag (its generation differs):
 * a give-back never reaches it, IDs still buffered from the deleted tag are
 * dropped once the server sees the new generation, and a re-creation below
 * what the server handed out is refused with a message that says so.
 */
import { describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import type { Logger } from '../ports/logger.js';
import type { SegmentStore } from '../ports/segment-store.js';
import { ControlledStore, tick } from '../../test/helpers/fakes.js';
import { LastingStore, service as serviceOn, settle, take } from '../../test/helpers/id-service-steps.js';
import type { IdService } from './id-service.js';

function service(
  store: SegmentStore,
  marks: HighWaterMarkStore,
  extra: Partial<ConstructorParameters<typeof IdService>[0]> = {},
): IdService {
  // maxStep = the stored step: every range is exactly the step, as in issue 28.
  return serviceOn(store, marks, { allocator: { maxStep: 10 }, ...extra });
}

async function recreate(store: SegmentStore, tag: string, start: bigint, step = 10): Promise<void> {
  await store.deleteTag(tag);
  await store.createTag({ tag, step, start });
}

describe('a tag deleted and created again', () => {
  it('a clean shutdown gives nothing back into it (the issue 28 scenario, in one process)', async () => {
    const store = new LastingStore();
    const pMarks = new MemoryHighWaterMarkStore();
    const opts = { allocator: { maxStep: 100 } };
    await store.createTag({ tag: 't', step: 100 });
    const p = service(store, pMarks, opts);
    await p.start();
    expect(await take(p, 't', 15)).toEqual(Array.from({ length: 15 }, (_, i) => BigInt(i + 1)));
    await settle(p, 't'); // P holds [1,101) and [101,201)
    expect((await store.getTag('t'))?.maxId).toBe(201n);

    await recreate(store, 't', 101n, 100);
    const q = service(store, new MemoryHighWaterMarkStore(), opts);
    await q.start();
    const qIds = await take(q, 't', 5);
    expect(qIds).toEqual([101n, 102n, 103n, 104n, 105n]);
    expect((await store.getTag('t'))?.maxId).toBe(201n); // what P's compare-and-set expects, epoch 0 too

    await p.close();
    expect((await store.getTag('t'))?.maxId).toBe(201n); // refused: not the tag P's ranges came from

    const p2 = service(store, pMarks, opts);
    await p2.start();
    const again = await take(p2, 't', 100);
    expect(again.filter((x) => qIds.includes(x))).toEqual([]);
    expect(again[0]).toBe(201n);
    await p2.close();
    await q.close();
  });

  it('a range of the new tag arriving during shutdown is given back alone, never joined to the old tail', async () => {
    const store = new ControlledStore();
    await store.createTag({ tag: 't', step: 100 });
    const p = service(store, new MemoryHighWaterMarkStore(), { allocator: { maxStep: 100 } });
    await p.start();
    expect(await take(p, 't', 1)).toEqual([1n]);
    store.hold = true;
    expect(await take(p, 't', 14)).toHaveLength(14); // past 10%: the prefetch is held
    expect(store.pending).toHaveLength(1);
    await recreate(store, 't', 101n, 100); // at the old max_id: the safe start
    const closing = p.close();
    await tick();
    await store.release(); // [101,201) of the new tag, after close: contiguous with the old tail [16,101)
    await closing;
    // the late range went back on its own; the old tail did not ride along below the new tag's start
    expect((await store.getTag('t'))?.maxId).toBe(101n);
  });

  it('a load that finds a new generation drops the IDs still buffered from the deleted tag', async () => {
    const store = new LastingStore();
    await store.createTag({ tag: 't', step: 100 });
    const logs: string[] = [];
    const logger: Logger = {
      info: () => {},
      warn: (_o, msg) => void logs.push(String(msg)),
      error: () => {},
      debug: () => {},
    };
    const p = service(store, new MemoryHighWaterMarkStore(), { allocator: { maxStep: 100 }, logger });
    await p.start();
    expect(await take(p, 't', 1)).toEqual([1n]); // holds [1,101), nothing prefetched yet
    const a = await p.allocator('t');
    const first = a.generation;
    expect(first).toBe((await store.getTag('t'))?.generation);

    await recreate(store, 't', 101n, 100);
    await a.load(); // as the prefetch would
    expect(a.generation).toBe((await store.getTag('t'))?.generation);
    expect(a.generation).not.toBe(first);
    // 2–100 belonged to the deleted tag: never handed out now
    expect(await take(p, 't', 2)).toEqual([101n, 102n]);
    expect(logs.some((m) => m.includes('deleted and created again'))).toBe(true);
    await p.close();
  });

  it('the refresh drops an allocator whose tag was created again, without giving anything back', async () => {
    const store = new LastingStore();
    await store.createTag({ tag: 't', step: 100 });
    const p = service(store, new MemoryHighWaterMarkStore(), { allocator: { maxStep: 100 } });
    await p.start();
    expect(await take(p, 't', 3)).toEqual([1n, 2n, 3n]);
    await recreate(store, 't', 101n, 100);
    const q = service(store, new MemoryHighWaterMarkStore(), { allocator: { maxStep: 100 } });
    await q.start();
    expect(await take(q, 't', 1)).toEqual([101n]);
    await p.refresh();
    // not 4: the old buffer is gone; the next range comes from the new tag
    expect(await take(p, 't', 1)).toEqual([201n]);
    await p.close();
    expect((await store.getTag('t'))?.maxId).toBe(202n); // P gave back its own tail [202,301) of the new tag only
    await q.close();
  });

  it('created again below what this server handed out: refused, and the refusal says why', async () => {
    const store = new LastingStore();
    await store.createTag({ tag: 't', step: 10 });
    const p = service(store, new MemoryHighWaterMarkStore());
    await p.start();
    expect(await take(p, 't', 3)).toEqual([1n, 2n, 3n]);
    await recreate(store, 't', 1n);
    const a = await p.allocator('t');
    await a.load();
    const err = await Promise.resolve(p.next('t')).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(err?.code).toBe('STORE_ROLLBACK_DETECTED');
    expect(err?.message).toContain('the tag deleted and created again');
    // this process saw both creations: it says which one this is
    expect(err?.message).toMatch(/here: the tag was deleted and created again, generation [0-9]+ -> [0-9]+/);
    await p.close();
  });

  it('strict tags: a re-creation below the mark is refused, one at or above it is served', async () => {
    const store = new LastingStore();
    await store.createTag({ tag: 's', step: 10 });
    const p = service(store, new MemoryHighWaterMarkStore(), { strictTags: ['s'] });
    await p.start();
    expect(await take(p, 's', 3)).toEqual([1n, 2n, 3n]);
    await recreate(store, 's', 2n);
    await expect(Promise.resolve(p.next('s'))).rejects.toMatchObject({
      code: 'STORE_ROLLBACK_DETECTED',
      message: expect.stringContaining('or the tag deleted and created again') as unknown,
    });
    await p.close();

    const store2 = new LastingStore();
    await store2.createTag({ tag: 's', step: 10 });
    const r = service(store2, new MemoryHighWaterMarkStore(), { strictTags: ['s'] });
    await r.start();
    expect(await take(r, 's', 3)).toEqual([1n, 2n, 3n]);
    await recreate(store2, 's', 4n);
    expect(await take(r, 's', 2)).toEqual([4n, 5n]);
    await r.close();
  });
});

/** Trips `tag` on a fresh server: fenced `epochs` times, one range served, the store then restored to an old backup. */
async function tripAt(store: LastingStore, marks: HighWaterMarkStore, epochs: number): Promise<void> {
  await store.createTag({ tag: 't', step: 10, start: 0n });
  for (let i = 0; i < epochs; i++) await store.fence('t', 0n);
  const p = service(store, marks);
  await p.start();
  await take(p, 't', 1);
  await settle(p, 't');
  store.restore('t', 0n);
  await expect(take(p, 't', 30)).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
  await p.close();
}

async function first(store: SegmentStore, marks: HighWaterMarkStore): Promise<bigint | { code: string; message: string }> {
  const p = service(store, marks);
  await p.start();
  try {
    return BigInt(await p.next('t'));
  } catch (e) {
    return e as { code: string; message: string };
  } finally {
    await p.close();
  }
}

describe('a rollback refusal across a re-creation of the tag', () => {
  it('stands until a fence: re-created above everything but not fenced, the tag is still refused', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await tripAt(store, marks, 2);
    expect((await marks.get('t'))?.trippedGeneration).toBe((await store.getTag('t'))?.generation);
    await recreate(store, 't', 1000n);
    expect(await first(store, marks)).toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await store.fence('t', 1000n); // the new creation's first fence: epoch 1, below the trip's 2
    expect(await first(store, marks)).toBe(1000n);
    expect((await marks.get('t'))?.trippedAtEpoch).toBeUndefined();
  });

  it('a re-creation below the mark, fenced below it elsewhere, is refused again by the mark until a fence above it', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await tripAt(store, marks, 2);
    const mark = (await marks.get('t'))?.mark ?? 0n;
    expect(mark).toBeGreaterThan(5n);
    await recreate(store, 't', 0n);
    await store.fence('t', 5n); // lifts the old creation's trip; [5, ...) is still below the mark
    expect(await first(store, marks)).toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    const trip = await marks.get('t');
    expect(trip).toMatchObject({ trippedAtEpoch: 1, trippedGeneration: (await store.getTag('t'))?.generation });
    const fenced = await store.fence('t', mark); // epoch 2 of the new creation, at the mark (max_id is past it: the refused range)
    expect(await first(store, marks)).toBe(fenced.maxId);
  });

  it('a trip recorded without a creation (an earlier version) is judged by fence epochs alone, as before', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 10, start: 1000n });
    await marks.put('t', { mark: 100n, trippedAtEpoch: 2 });
    await store.fence('t', 1000n); // epoch 1: not above the trip's
    expect(await first(store, marks)).toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await store.fence('t', 1000n);
    await store.fence('t', 1000n); // epoch 3
    expect(await first(store, marks)).toBe(1000n);
  });
});
