/** Give-back on a clean shutdown: a restart continues at the next unused ID; never a repeat, never a false rollback. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../ports/segment-store.js';
import { SqliteSegmentStore } from '../adapters/sqlite/sqlite-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { ControlledStore, tick } from '../../test/helpers/fakes.js';
import { LastingStore, service, settle, take } from '../../test/helpers/id-service-steps.js';

describe('give-back on a clean shutdown', () => {
  it('a restarted server continues at exactly the next unused ID (current and a contiguous next)', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 'order', step: 10 });
    const a = service(store, marks);
    await a.start();
    expect(await take(a, 'order', 3)).toEqual([1n, 2n, 3n]);
    await settle(a, 'order'); // the prefetched next range [11, 31) is in
    expect(a.snapshot()[0]?.nextReady).toBe(true);
    expect((await store.getTag('order'))?.maxId).toBe(31n);
    await a.close();
    expect((await store.getTag('order'))?.maxId).toBe(4n);
    expect((await marks.get('order'))?.mark).toBe(4n);

    const b = service(store, marks);
    await b.start();
    expect(await take(b, 'order', 2)).toEqual([4n, 5n]);
    await b.close();
  });

  it('gives back the current tail when no next range is loaded', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 100 });
    const a = service(store, marks);
    await a.start();
    expect(await take(a, 't', 5)).toEqual([1n, 2n, 3n, 4n, 5n]); // below the 10% prefetch point
    expect(a.snapshot()[0]?.nextReady).toBe(false);
    await a.close();
    expect((await store.getTag('t'))?.maxId).toBe(6n);
    const b = service(store, marks);
    await b.start();
    expect(await take(b, 't', 1)).toEqual([6n]);
    await b.close();
  });

  it('a next range not contiguous with the current one: only the next range goes back', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 10 });
    const a = service(store, marks);
    await a.start();
    await take(a, 't', 1); // [1, 11)
    await store.allocate('t'); // someone else: [11, 21)
    await take(a, 't', 2); // prefetch: [21, 41)
    await settle(a, 't');
    expect(a.snapshot()[0]?.next).toEqual({ start: 21n, end: 41n });
    await a.close();
    expect((await store.getTag('t'))?.maxId).toBe(21n);
  });

  it('when another server allocated after us, nothing is given back', async () => {
    const store = new LastingStore();
    const marksA = new MemoryHighWaterMarkStore();
    const marksB = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 10 });
    const a = service(store, marksA);
    const b = service(store, marksB);
    await a.start();
    await b.start();
    const fromA = await take(a, 't', 1); // A: [1, 11)
    const fromB = await take(b, 't', 1); // B: [11, 21)
    await a.close();
    expect((await store.getTag('t'))?.maxId).toBe(21n);
    // A's mark was lowered (weaker, still above all A handed out), and A restarts without a false rollback
    expect((await marksA.get('t'))?.mark).toBe(2n);
    const a2 = service(store, marksA);
    await a2.start();
    const more = await take(a2, 't', 3);
    expect(more[0]).toBe(21n);
    expect(new Set([...fromA, ...fromB, ...more]).size).toBe(5);
    await a2.close();
    await b.close();
  });

  it('a load in flight at shutdown: its range arrives after close, is never served, and goes back with the tail', async () => {
    const store = new ControlledStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 10 });
    const a = service(store, marks);
    await a.start();
    await take(a, 't', 1); // [1, 11)
    store.hold = true;
    await take(a, 't', 2); // 2 starts the prefetch, which the store holds; 3
    await tick(); // the prefetch has read the marks and asked the store
    const closing = a.close();
    expect(store.pending.length).toBe(1);
    await store.release(); // the store commits [11, 31) after the server stopped serving
    await closing;
    expect((await store.getTag('t'))?.maxId).toBe(4n);
  });

  it('never gives back after a rollback was detected, and can be disabled', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 10 });
    const a = service(store, marks, { giveBackOnClose: false });
    await a.start();
    await take(a, 't', 1);
    await a.close();
    expect((await store.getTag('t'))?.maxId).toBe(11n);

    const b = service(store, marks);
    await b.start();
    await take(b, 't', 1); // [11, 21)
    store.restore('t', 5n); // an old backup
    // the prefetch answers [5, 25), below the mark 21: the guard trips and the buffer is dropped
    await expect(take(b, 't', 10)).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    const before = (await store.getTag('t'))?.maxId;
    await b.close();
    expect((await store.getTag('t'))?.maxId).toBe(before);
  });

  it('SQLite file and file marks: restart after a clean close continues at the next ID, twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-giveback-'));
    const path = join(dir, 'ids.db');
    const marks = new StateDir(join(dir, 'state'));
    const seen: bigint[] = [];
    for (let round = 0; round < 3; round++) {
      const s = service(new SqliteSegmentStore({ path }), marks);
      await s.start();
      if (round === 0) await s.createTag({ tag: 'inv', step: 50 });
      seen.push(...(await take(s, 'inv', 7)));
      await settle(s, 'inv');
      await s.close();
    }
    expect(seen).toEqual(Array.from({ length: 21 }, (_, i) => BigInt(i + 1)));
  });

  it('nothing is given back across a fence made after the last range (its bound may lie inside the tail)', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 'order', step: 100 });
    const a = service(store, marks, { allocator: { maxStep: 100 } });
    await a.start();
    expect(await take(a, 'order', 5)).toEqual([1n, 2n, 3n, 4n, 5n]);
    await settle(a, 'order');
    const maxBefore = (await store.getTag('order'))!.maxId;
    // an operator fences to 50 (below max_id): IDs below 50 are declared possibly used
    await store.fence('order', 50n);
    await a.close();
    expect((await store.getTag('order'))!.maxId).toBe(maxBefore);
    const b = service(store, marks);
    await b.start();
    expect(await take(b, 'order', 1)).toEqual([maxBefore]);
    await b.close();
  });
  it('two workers sharing one state directory: a give-back never lowers the mark below IDs the other worker handed out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-giveback-'));
    const store = new LastingStore();
    await store.createTag({ tag: 't', step: 10 });
    const marks = () => new StateDir(join(dir, 'state'));
    const early = service(store, marks());
    const late = service(store, marks());
    await early.start();
    await late.start();
    await take(early, 't', 2);
    await settle(early, 't');
    const lateIds = await take(late, 't', 5); // the later ranges
    await settle(late, 't');
    await late.close(); // gives its tail back: the mark drops to its cursor
    await early.close(); // its range is not the last one: it must leave the mark alone
    const top = lateIds[lateIds.length - 1]!;
    expect((await marks().get('t'))!.mark).toBeGreaterThan(top);
    const again = service(store, marks());
    await again.start();
    expect(BigInt(await again.next('t'))).toBeGreaterThan(top);
    await again.close();
  });

  it("two workers on one state directory and one SQLite file: a give-back between the other worker's floor read and its store answer is no rollback", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-giveback-race-'));
    const path = join(dir, 'ids.db');
    /** A worker's own connection to the file, whose allocations can be held at the store's door (sent, not yet answered). */
    class Held extends SqliteSegmentStore {
      hold = false;
      readonly waiting: Array<() => void> = [];
      override async allocate(tag: string, step?: number): Promise<Allocation> {
        if (this.hold) await new Promise<void>((r) => this.waiting.push(r));
        return super.allocate(tag, step);
      }
    }
    const storeA = new Held({ path });
    const storeB = new Held({ path });
    const a = service(storeA, new StateDir(join(dir, 'state')));
    const b = service(storeB, new StateDir(join(dir, 'state')));
    await a.start();
    await b.start();
    await a.createTag({ tag: 't', step: 10 });
    const fromA = await take(a, 't', 2);
    await settle(a, 't');
    const aEnd = (await storeA.getTag('t'))!.maxId;
    // B's first request: its floor is read (A's range end), its allocation waits at the store.
    storeB.hold = true;
    const bFirst = b.next('t');
    await expect.poll(() => storeB.waiting.length).toBe(1);
    // A stops meanwhile: the server-wide mark and the store's max_id go back to A's cursor.
    await a.close();
    expect((await storeB.getTag('t'))!.maxId).toBeLessThan(aEnd);
    storeB.hold = false;
    storeB.waiting.shift()!();
    // B's answer starts at A's cursor, below the floor it read before sending: a give-back, not a restore.
    const id = BigInt(await bFirst);
    expect(id).toBe(fromA[fromA.length - 1]! + 1n);
    const more = await take(b, 't', 20);
    const all = [...fromA, id, ...more];
    expect(new Set(all).size).toBe(all.length);
    await b.close();
  });
});
