/**
 * Bugs the simulator found (issue 42; the seeds are in
 * sim/regression-seeds.json): two refusals without a rollback (availability:
 * the tag is refused, STORE_ROLLBACK_DETECTED, by a server that nothing can
 * reopen as documented), one repeat, and a lease overlap in the snowflake
 * world. Marked `it.fails` while they stand: a fix makes them pass, and then
 * `.fails` goes.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import type { Allocation } from '../ports/segment-store.js';
import { LastingStore, service, settle, take } from '../../test/helpers/id-service-steps.js';
import { SnowflakeGenerator } from '../core/snowflake/generator.js';
import { getLayout } from '../core/snowflake/layout.js';

interface WorkerMarks {
  readonly a: HighWaterMarkStore;
  readonly b: HighWaterMarkStore;
  close(): Promise<void>;
}
const shared = (m: HighWaterMarkStore): WorkerMarks => ({ a: m, b: m, close: async () => {} });
/** Each worker process opens the server's state dir itself. */
function eachOpens(dir: string): WorkerMarks {
  const a = new StateDir(dir);
  const b = new StateDir(dir);
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** The store as one worker reaches it: its next `allocate` waits, unapplied, until `release()`. */
function heldFor(store: LastingStore): { store: LastingStore; reached: Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const arrived = new Promise<void>((r) => (reached = r));
  const gate = new Promise<void>((r) => (release = r));
  const view = new Proxy(store, {
    get: (target, prop, receiver) =>
      prop === 'allocate'
        ? async (tag: string, step?: number): Promise<Allocation> => {
            reached();
            await gate;
            return target.allocate(tag, step);
          }
        : Reflect.get(target, prop, receiver),
  });
  return { store: view, reached: arrived, release };
}

describe('found by the simulator', () => {
  // sim seed 46: a trip recorded at fence epoch 2 of one creation of the tag; the tag is deleted and
  // created again (its fence epoch starts at 0 again) and fenced once (epoch 1): 1 <= 2, the trip stood.
  // The trip now names its creation (generation), and any fence of a later creation lifts it.
  it('a fence after the tag was deleted and created again lifts a rollback refusal recorded before', async () => {
    const store = new LastingStore();
    const marks = new MemoryHighWaterMarkStore();
    await store.createTag({ tag: 't', step: 10, start: 0n });
    const p = service(store, marks, { allocator: { maxStep: 10 } });
    await p.start();
    await store.fence('t', 0n);
    await store.fence('t', 0n); // fence epoch 2
    await take(p, 't', 1);
    await settle(p, 't');
    store.restore('t', 0n); // an old backup
    await expect(take(p, 't', 30)).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await p.close();

    await store.deleteTag('t');
    await store.createTag({ tag: 't', step: 10, start: 1000n }); // above everything: fence epoch 0
    await store.fence('t', 1000n); // the operator's fence: epoch 1
    const restarted = service(store, marks, { allocator: { maxStep: 10 } });
    await restarted.start();
    expect((await take(restarted, 't', 1))[0]).toBe(1000n); // was refused: "a rollback was detected earlier"
    await restarted.close();
  });

  // sim seed 30: Q's prefetched range is given back whole, so the store's max_id is back at the end
  // of P's range; P's give-back then passes its compare-and-set (ABA) and lowers max_id below the
  // mark Q kept (the start of its given-back range). No ID repeats, but Q refused the tag until a fence.
  it("a give-back after another server's give-back leaves that server able to serve", async () => {
    const store = new LastingStore();
    await store.createTag({ tag: 't', step: 100, start: 0n });
    const qMarks = new MemoryHighWaterMarkStore();
    const opts = { allocator: { maxStep: 100 } };
    const q = service(store, qMarks, opts);
    const p = service(store, new MemoryHighWaterMarkStore(), opts);
    await q.start();
    await p.start();
    await take(q, 't', 1); // Q: [0,100)
    await take(p, 't', 1); // P: [100,200)
    await take(q, 't', 10); // past 10%: Q prefetches [200,300)
    await settle(q, 't');
    await q.close(); // gives [200,300) back: max_id 200, Q's mark 200
    expect((await store.getTag('t'))?.maxId).toBe(200n);
    await p.close(); // expects max_id 200: gives [101,200) back
    expect((await store.getTag('t'))?.maxId).toBe(101n);
    const q2 = service(store, qMarks, opts);
    await q2.start();
    expect((await take(q2, 't', 1))[0]).toBe(101n); // was refused: [101,201) below the mark 200 Q had kept
    await q2.close();
  });

  // sim snowflake seed 17: a holder's wall clock frozen (a stalled VM clock, libfaketime) while its
  // lease runs out: the generator reads its deadline only when the clock's ms changes or every 64
  // IDs, so it issues after the store granted the id to another. No ID repeats (the new holder starts
  // after the reserved tick), but the two holders overlap.
  it('a generator whose wall clock is frozen stops at its lease deadline', () => {
    let mono = 0;
    const clock = { now: () => 1_767_225_600_000, monotonic: () => mono };
    const g = new SnowflakeGenerator({ layout: getLayout('twitter'), clock, worker: { workerId: 1 }, validUntil: 1000 });
    expect(typeof g.take()).toBe('string');
    mono = 2000; // the deadline passed; the frozen wall clock reads the same ms
    expect(() => g.take()).toThrow(/lease/);
  });

  // sim seed 17: two workers of one server (one set of marks) on a strict tag. B reads its floor and
  // sends; A's request commits [1,2) and A records its mark and answers 1; the store fails over to a
  // replica that lost A's commit, so B's request is answered [1,2) too. B's floor was read before A's
  // mark existed: judged by it alone, B's answer passes and 1 is answered twice.
  it.each([
    ['one marks store in memory', () => shared(new MemoryHighWaterMarkStore())],
    ['a state dir, opened by each worker', () => eachOpens(mkdtempSync(join(tmpdir(), 'sequoia-sim17-')))],
  ])("two workers of one server never answer the same strict ID when a failover loses one worker's commit (%s)", async (_, marksOf) => {
    const store = new LastingStore();
    await store.createTag({ tag: 's' });
    const marks = marksOf();
    const held = heldFor(store);
    const a = service(store, marks.a, { strictTags: ['s'] });
    const b = service(held.store, marks.b, { strictTags: ['s'] });
    await a.start();
    await b.start();
    const fromB = Promise.resolve(b.next('s')).then(
      (id) => ({ id }),
      (e: unknown) => ({ e }),
    );
    await held.reached; // B read its floor (no mark yet) and sent
    const before = (await store.getTag('s'))?.maxId ?? -1n;
    const first = await a.next('s');
    store.restore('s', before); // the failover: the replica lost A's commit
    held.release();
    const got = await fromB;
    expect(got).not.toEqual({ id: first });
    expect(got).toMatchObject({ e: { code: 'STORE_ROLLBACK_DETECTED' } });
    await a.close();
    await b.close();
    await marks.close();
  });
});
