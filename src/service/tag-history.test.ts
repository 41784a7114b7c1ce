/**
 * Where a deleted tag's name may start again: the highest end the store ever
 * recorded for the name (max_id and the range ledger), and what the advice
 * admits when the ledger is empty (pruned) or absent (Leaf/Tinyid tables).
 */
import { describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MultiSegmentStore } from '../adapters/multi/multi-segment-store.js';
import type { SegmentStore } from '../ports/segment-store.js';
import { IdService } from './id-service.js';
import { belowHistory, deleteAdvice } from './tag-history.js';

function service(store: SegmentStore): IdService {
  return new IdService({ store, marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
}

describe('a tag name across deletes and re-creations', () => {
  it('the safe start is the ledger top + 1 when an earlier creation went above the current max_id', async () => {
    const store = new MemorySegmentStore();
    const s = service(store);
    await s.start();
    await s.createTag({ tag: 'p2', step: 100 });
    await store.allocate('p2'); // [1, 100]
    await store.allocate('p2'); // [101, 200]
    await s.deleteTag('p2');
    await s.createTag({ tag: 'p2', step: 5, start: 1 });
    await store.allocate('p2'); // [1, 5]: max_id 6
    const h = await s.tagHistory('p2');
    expect(h.current?.maxId).toBe(6n);
    expect(h.top?.last).toBe(200n);
    expect(h.safeStart).toBe(201n);
    expect(belowHistory(h, 6n)).toMatch(/IDs from 6 to 200 may be handed out again.*--start 201 or higher/);
    expect(belowHistory(h, 201n)).toBeUndefined();
    await s.deleteTag('p2');
    const advice = deleteAdvice(await s.tagHistory('p2', 6n), 6n);
    expect(advice).toMatch(/its max_id was 6; the range ledger records ranges up to ID 200 .*use --start 201 or higher/);
    expect(advice).toMatch(/ledgerRetentionDays/);
    await s.close();
  });

  it('a give-back counts (the ledger cannot tell whether it was taken again); max_id wins when it is higher', async () => {
    const store = new MemorySegmentStore();
    await store.createTag({ tag: 't', step: 100, start: 1n });
    const a = await store.allocate('t'); // [1, 100]
    expect(await store.giveBack('t', 51n, a)).toBe(true);
    const s = service(store);
    await s.start();
    expect((await s.tagHistory('t')).safeStart).toBe(101n);
    await store.fence('t', 5000n);
    expect((await s.tagHistory('t')).safeStart).toBe(5000n);
    await s.close();
  });

  it('an emptied (pruned) ledger: max_id, and the advice says the ledger cannot rule older IDs out', async () => {
    const store = new MemorySegmentStore();
    await store.createTag({ tag: 't', step: 10, start: 40n });
    await store.allocate('t');
    await store.pruneLedger(Date.now() + 1, 1000);
    const s = service(store);
    await s.start();
    await s.deleteTag('t');
    const h = await s.tagHistory('t', 50n);
    expect(h.top).toBeUndefined();
    expect(deleteAdvice(h, 50n)).toMatch(/use --start 50 or higher\. Note: the range ledger holds no range of this name/);
    await s.close();
  });

  it('a store without a ledger: max_id, and the advice says so', async () => {
    const inner = new MemorySegmentStore();
    const store = new Proxy(inner, {
      get: (t, p) => (p === 'ledgerTop' ? undefined : (Reflect.get(t, p, t) as unknown)),
    }) as SegmentStore;
    const s = service(store);
    await s.start();
    await s.createTag({ tag: 't', start: 7 });
    await s.deleteTag('t');
    const h = await s.tagHistory('t', 7n);
    expect(h.ledger).toBe(false);
    expect(deleteAdvice(h, 7n)).toMatch(/use --start 7 or higher\. Note: this store keeps no range ledger/);
    await s.close();
  });

  it('a multi-store set: member tops in IDs of the set', async () => {
    const a = new MemorySegmentStore();
    const b = new MemorySegmentStore();
    const set = new MultiSegmentStore([a, b]);
    const s = service(set);
    await s.start();
    await s.createTag({ tag: 't', step: 10 });
    await a.allocate('t'); // units [1, 10] of store 0: IDs up to 20
    await b.allocate('t'); // units [0, 9] of store 1: IDs up to 19
    await b.allocate('t'); // units [10, 19] of store 1: IDs up to 39
    const h = await s.tagHistory('t');
    expect(h.top?.last).toBe(39n);
    // the set's max_id (counter 20 of store 1: 20 × 2 + 1) is the higher bound here
    expect(h.safeStart).toBe(41n);
    await s.close();
  });
});
