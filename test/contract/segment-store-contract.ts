/**
 * The one contract every SegmentStore runs (memory, SQLite, PostgreSQL,
 * MySQL/MariaDB, Redis, multi-store). Each store's test file supplies a
 * factory; stores that several processes can share also give a URL, and then
 * the suite spawns child processes that allocate against the same store at
 * once and checks that no ID is answered twice.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SequoiaError } from '../../src/core/errors.js';
import { MAX_ID } from '../../src/core/id.js';
import type { Allocation, GiveBackExpectation, SegmentStore } from '../../src/ports/segment-store.js';
import { ensureDist } from './ensure-dist.js';

export interface ContractHarness {
  readonly store: SegmentStore;
  /** Reads the raw stored state of a tag, for `restore` (as a backup would). */
  snapshot(tag: string): Promise<unknown>;
  /** Writes a snapshot back directly (SQL / Redis / in memory), as a restore from backup would. */
  restore(tag: string, snap: unknown): Promise<void>;
  /** A URL other processes can open to reach the same store (createStore syntax); none for private stores. */
  readonly url?: string;
  /** IDs per store unit: N for a multi-store set of N, else 1. */
  readonly stride?: number;
  /** A second, independent instance on the same backend (stores other processes can share). */
  reopen?(): Promise<SegmentStore>;
  /** Makes the server drop this store's connections, as a restart would; answers how many it dropped (networked stores). */
  dropConnections?(): Promise<number>;
  /** A store of this kind pointed at a port where nothing listens. */
  unreachable?(): SegmentStore;
  /** A store of this kind on the named table (SQL stores): a name that is not a plain identifier must throw. */
  withName?(name: string): SegmentStore;
  /**
   * The store keeps no range ledger by design (a peer's own table, Leaf's or
   * Tinyid's: docs/audit.md says so, and audit lists it under "not checked").
   */
  readonly noLedger?: true;
  /** Drops tables / keys and closes. */
  cleanup(): Promise<void>;
}

export type ContractFactory = () => Promise<ContractHarness>;

/** A give-back's expectation from the answer that ended at its max_id (what a server passes). */
export function since(a: Pick<Allocation, 'maxId' | 'fenceEpoch' | 'generation'>): GiveBackExpectation {
  return { maxId: a.maxId, fenceEpoch: a.fenceEpoch, generation: a.generation };
}

/** The IDs of one allocation, as the allocator would hand them out. */
export function idsOf(a: Allocation): bigint[] {
  const stride = BigInt(a.stride ?? 1);
  const out: bigint[] = [];
  for (let k = 0n, v = a.maxId - BigInt(a.step) * stride; k < BigInt(a.step); k++, v += stride) out.push(v);
  return out;
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as SequoiaError).code;
  }
}

function expectDisjoint(allocs: Allocation[]): Set<string> {
  const seen = new Set<string>();
  let total = 0;
  for (const a of allocs) {
    for (const id of idsOf(a)) seen.add(id.toString());
    total += a.step;
  }
  expect(seen.size).toBe(total);
  return seen;
}

let uniq = 0;

/**
 * `inProcessOnly`: the store lives in this process (memory), so the cases that
 * need a second process or a second instance on the same backend do not apply
 * and are not registered (rather than skipped at run time).
 */
export function runSegmentStoreContract(name: string, factory: ContractFactory, options: { inProcessOnly?: boolean } = {}): void {
  const shared = !options.inProcessOnly;
  describe(`SegmentStore contract: ${name}`, () => {
    let h: ContractHarness;
    let store: SegmentStore;
    let stride: number;
    /** A tag name unique to this test run. */
    const tag = (base: string) => `${base}-${process.pid}-${++uniq}`;

    beforeAll(async () => {
      h = await factory();
      store = h.store;
      stride = h.stride ?? 1;
      await store.init();
      await store.init(); // idempotent
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    describe('tag lifecycle', () => {
      it('creates, gets, lists, updates and deletes', async () => {
        const t = tag('life');
        const created = await store.createTag({ tag: t, step: 10, start: 5n, description: 'orders' });
        expect(created).toMatchObject({ tag: t, step: 10, description: 'orders', fenceEpoch: 0 });
        expect(created.updatedAt).toBeInstanceOf(Date);
        expect(Number.isNaN(created.updatedAt.getTime())).toBe(false);
        if (stride === 1) expect(created.maxId).toBe(5n);

        const got = await store.getTag(t);
        expect(got).toMatchObject({ tag: t, step: 10, description: 'orders' });
        expect(got?.maxId).toBe(created.maxId);

        const listed = (await store.listTags()).filter((i) => i.tag === t);
        expect(listed).toHaveLength(1);
        expect(listed[0]?.maxId).toBe(created.maxId);

        const updated = await store.updateTag(t, { step: 20 });
        expect(updated).toMatchObject({ step: 20, description: 'orders' });
        const described = await store.updateTag(t, { description: '' });
        expect(described).toMatchObject({ step: 20, description: '' });
        expect((await store.getTag(t))?.step).toBe(20);

        await store.deleteTag(t);
        expect(await store.getTag(t)).toBeUndefined();
        expect((await store.listTags()).some((i) => i.tag === t)).toBe(false);
      });

      it('defaults: step 1000, start 1, empty description', async () => {
        const t = tag('defaults');
        const c = await store.createTag({ tag: t });
        expect(c).toMatchObject({ step: 1000, description: '', fenceEpoch: 0 });
        const a = await store.allocate(t);
        expect(a.step).toBe(1000);
        const ids = idsOf(a);
        expect(ids.every((id) => id >= 1n)).toBe(true);
        if (stride === 1) expect(ids[0]).toBe(1n);
      });

      it('lists in tag order', async () => {
        const names = [tag('ord-b'), tag('ord-a'), tag('ord-C')];
        for (const n of names) await store.createTag({ tag: n, step: 1 });
        const listed = (await store.listTags()).map((i) => i.tag).filter((t) => names.includes(t));
        expect(listed).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      });

      it('TAG_EXISTS on a duplicate, leaving the first untouched', async () => {
        const t = tag('dup');
        await store.createTag({ tag: t, step: 7, description: 'first' });
        expect(await codeOf(store.createTag({ tag: t, step: 9, description: 'second' }))).toBe('TAG_EXISTS');
        expect(await store.getTag(t)).toMatchObject({ step: 7, description: 'first' });
      });

      it('tags are case-sensitive', async () => {
        const t = tag('Case');
        await store.createTag({ tag: t, step: 3 });
        await store.createTag({ tag: t.toLowerCase(), step: 4 });
        expect((await store.getTag(t))?.step).toBe(3);
        expect((await store.getTag(t.toLowerCase()))?.step).toBe(4);
      });

      it('TAG_NOT_FOUND on every operation for a missing tag', async () => {
        const t = tag('missing');
        expect(await store.getTag(t)).toBeUndefined();
        expect(await codeOf(store.allocate(t))).toBe('TAG_NOT_FOUND');
        expect(await codeOf(store.allocate(t, 5))).toBe('TAG_NOT_FOUND');
        expect(await codeOf(store.updateTag(t, { step: 5 }))).toBe('TAG_NOT_FOUND');
        expect(await codeOf(store.deleteTag(t))).toBe('TAG_NOT_FOUND');
        expect(await codeOf(store.fence(t, 100n))).toBe('TAG_NOT_FOUND');
        // and none of them created it
        expect(await store.getTag(t)).toBeUndefined();
      });

      it.each(['__proto__', 'constructor', '..', 'toString', 'hasOwnProperty'])('the tag %j is data and works', async (base) => {
        // These names are shared by the parallel runs of other stores' suites
        // on the same server only through their own table / key prefix.
        const t = base;
        await store.createTag({ tag: t, step: 4, description: base });
        expect(await store.getTag(t)).toMatchObject({ tag: t, step: 4, description: base });
        expect((await store.listTags()).filter((i) => i.tag === t)).toHaveLength(1);
        const a = await store.allocate(t);
        expect(a.step).toBe(4);
        await store.fence(t, 1000n);
        await store.deleteTag(t);
        expect(await store.getTag(t)).toBeUndefined();
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      });
    });

    describe('allocate', () => {
      it('hands out [start, start+step), then the next range, each once', async () => {
        const t = tag('seq');
        await store.createTag({ tag: t, step: 10, start: 100n });
        const a1 = await store.allocate(t);
        const a2 = await store.allocate(t);
        const a3 = await store.allocate(t);
        for (const a of [a1, a2, a3]) {
          expect(a.step).toBe(10);
          expect(a.storedStep).toBe(10);
          expect(a.fenceEpoch).toBe(0);
          expect(typeof a.maxId).toBe('bigint');
        }
        const seen = expectDisjoint([a1, a2, a3]);
        expect([...seen].every((id) => BigInt(id) >= 100n)).toBe(true);
        if (stride === 1) {
          expect([a1.maxId, a2.maxId, a3.maxId]).toEqual([110n, 120n, 130n]);
          expect(idsOf(a1)[0]).toBe(100n);
          expect((await store.getTag(t))?.maxId).toBe(130n);
        } else {
          expect(a1.stride).toBe(stride);
          expect((await store.getTag(t))!.maxId > 100n).toBe(true);
        }
      });

      it('start 0 hands out 0 first', async () => {
        const t = tag('zero');
        await store.createTag({ tag: t, step: 3, start: 0n });
        const all: Allocation[] = [];
        for (let i = 0; i < stride; i++) all.push(await store.allocate(t));
        const ids = [...expectDisjoint(all)].map(BigInt);
        expect(ids.includes(0n)).toBe(true);
        expect(ids.every((id) => id >= 0n)).toBe(true);
      });

      it('a custom step per allocation (the dynamic step) overrides the stored step once', async () => {
        const t = tag('dyn');
        await store.createTag({ tag: t, step: 10, start: 1n });
        const big = await store.allocate(t, 40);
        expect(big).toMatchObject({ step: 40, storedStep: 10 });
        const again = await store.allocate(t);
        expect(again).toMatchObject({ step: 10, storedStep: 10 });
        const small = await store.allocate(t, 1);
        expect(small).toMatchObject({ step: 1, storedStep: 10 });
        expectDisjoint([big, again, small]);
        if (stride === 1) expect([big.maxId, again.maxId, small.maxId]).toEqual([41n, 51n, 52n]);
        // the stored step is untouched by overrides; an update changes the default
        expect((await store.getTag(t))?.step).toBe(10);
        await store.updateTag(t, { step: 25 });
        expect(await store.allocate(t)).toMatchObject({ step: 25, storedStep: 25 });
      });

      it('any per-call step, as strict tags ask (the sum of a batch of requests: 1 to 500,000), is applied exactly', async () => {
        const t = tag('anystep');
        await store.createTag({ tag: t, step: 1, start: 1n });
        const steps = [1, 3, 17, 50, 1, 10_000, 500_000, 2];
        const allocs: Allocation[] = [];
        for (const s of steps) allocs.push(await store.allocate(t, s));
        expect(allocs.map((a) => a.step)).toEqual(steps);
        expectDisjoint(allocs);
        if (stride === 1) {
          let end = 1n;
          for (const [i, a] of allocs.entries()) {
            end += BigInt(steps[i] as number);
            expect(a.maxId).toBe(end); // back to back: [previous end, previous end + step)
          }
        }
      });

      it('concurrent allocations from many promises are disjoint', async () => {
        const t = tag('conc');
        await store.createTag({ tag: t, step: 7, start: 1n });
        const allocs = await Promise.all(Array.from({ length: 60 }, (_, i) => store.allocate(t, i % 3 === 0 ? 11 : undefined)));
        expectDisjoint(allocs);
        if (stride === 1) {
          const total = allocs.reduce((s, a) => s + a.step, 0);
          expect((await store.getTag(t))?.maxId).toBe(1n + BigInt(total));
        }
      });

      it('near 2^63-1: exact bigints, then ID_SPACE_EXHAUSTED, never a wrap', async () => {
        const t = tag('edge');
        const step = 1000;
        const start = MAX_ID - BigInt(2 * step * stride);
        await store.createTag({ tag: t, step, start });
        const ok: Allocation[] = [];
        for (let i = 0; i < 2 * stride; i++) ok.push(await store.allocate(t));
        const ids = [...expectDisjoint(ok)].map(BigInt);
        expect(ids).toHaveLength(2 * step * stride);
        expect(ids.every((id) => id >= start && id <= MAX_ID)).toBe(true);
        if (stride === 1) {
          expect(ok[0]?.maxId).toBe(MAX_ID - BigInt(step));
          expect(ok[1]?.maxId).toBe(MAX_ID);
          expect(ok[1]?.maxId.toString()).toBe('9223372036854775807');
        }
        const ledgered = (await store.ledgerEntries?.(t))?.length;
        expect(await codeOf(store.allocate(t))).toBe('ID_SPACE_EXHAUSTED');
        expect(await codeOf(store.allocate(t, 1))).toBe('ID_SPACE_EXHAUSTED');
        expect(await codeOf(store.allocate(t))).toBe('ID_SPACE_EXHAUSTED');
        // a refused allocation records no range (a set's members answer on their own: one may still have room)
        if (stride === 1) expect((await store.ledgerEntries?.(t))?.length).toBe(ledgered);
        const after = await store.getTag(t);
        expect(after!.maxId >= MAX_ID - BigInt(stride)).toBe(true);
        if (stride === 1) expect(after?.maxId).toBe(MAX_ID);
      });

      it('a step that would pass 2^63-1 is refused while a smaller one still fits', async () => {
        const t = tag('edge2');
        const start = MAX_ID - BigInt(15 * stride);
        await store.createTag({ tag: t, step: 10, start });
        const a = await store.allocate(t);
        expect(a.step).toBe(10);
        // 5 units left per class at most: 10 does not fit, and the refusal writes nothing
        const before = await store.getTag(t);
        if (stride === 1) {
          expect(await codeOf(store.allocate(t))).toBe('ID_SPACE_EXHAUSTED');
          expect((await store.getTag(t))?.maxId).toBe(before?.maxId);
          const b = await store.allocate(t, 5);
          expect(b.maxId).toBe(MAX_ID);
        }
      });

      it('start at exactly 2^63-1 - step allows one allocation ending at 2^63-1', async () => {
        if (stride !== 1) return;
        const t = tag('edge3');
        await store.createTag({ tag: t, step: 1, start: MAX_ID - 1n });
        expect((await store.allocate(t)).maxId).toBe(MAX_ID);
        expect(await codeOf(store.allocate(t))).toBe('ID_SPACE_EXHAUSTED');
      });
    });

    describe('fence', () => {
      it('raises max_id, never lowers it, and bumps the epoch each time', async () => {
        const t = tag('fence');
        await store.createTag({ tag: t, step: 10, start: 1n });
        await store.allocate(t);
        const f1 = await store.fence(t, 5000n);
        expect(f1.fenceEpoch).toBe(1);
        expect(f1.maxId >= 5000n).toBe(true);
        if (stride === 1) expect(f1.maxId).toBe(5000n);
        const a = await store.allocate(t);
        expect(a.fenceEpoch).toBe(1);
        expect(idsOf(a).every((id) => id >= 5000n)).toBe(true);
        if (stride === 1) expect(a.maxId).toBe(5010n);

        const before = await store.getTag(t);
        const f2 = await store.fence(t, 10n); // lower: max_id stays
        expect(f2.fenceEpoch).toBe(2);
        expect(f2.maxId).toBe(before?.maxId);
        const b = await store.allocate(t);
        expect(b.fenceEpoch).toBe(2);
        expectDisjoint([a, b]);
        expect(idsOf(b).every((id) => id >= 5000n)).toBe(true);
      });

      it('fences to values beyond 2^53 exactly', async () => {
        const t = tag('fence-big');
        await store.createTag({ tag: t, step: 10, start: 1n });
        const to = 9007199254740993n; // 2^53 + 1: not a double
        const f = await store.fence(t, to);
        expect(f.maxId >= to).toBe(true);
        if (stride === 1) expect(f.maxId).toBe(to);
        const a = await store.allocate(t);
        expect(idsOf(a).every((id) => id >= to)).toBe(true);
        if (stride === 1) expect(a.maxId).toBe(to + 10n);
      });

      it('refuses a bound outside 0..2^63-1 (the stored-ID range check), changing nothing', async () => {
        await expectStoredIdRangeChecked(store, tag('fence-range'));
      });
    });

    describe('giveBack (compare-and-set on max_id, for a clean shutdown)', () => {
      it('gives back the tail of the last range only while no one allocated after it', async () => {
        const t = tag('give');
        await store.createTag({ tag: t, step: 10, start: 1n });
        const a = await store.allocate(t);
        // (a multi-store set rotates: after `stride` more, a's store has allocated again too)
        for (let i = 1; i < stride; i++) await store.allocate(t);
        const b = await store.allocate(t);
        const s = BigInt(stride);
        // a is not the last range any more: refused, nothing changes
        const before = await store.getTag(t);
        expect(await store.giveBack(t, a.maxId - 5n * s, since(a))).toBe(false);
        expect((await store.getTag(t))?.maxId).toBe(before?.maxId);
        if (stride === 1) {
          // b is the last: its unused tail [17, 21) goes back, and the next range starts there
          expect(await store.giveBack(t, b.maxId - 4n, since(b))).toBe(true);
          expect((await store.getTag(t))?.maxId).toBe(17n);
          expect(await store.giveBack(t, b.maxId - 4n, since(b))).toBe(false); // already changed
          const c = await store.allocate(t);
          expect(idsOf(c)[0]).toBe(17n);
          expect(c.maxId).toBe(27n);
          // equal values: a no-op that still matches
          expect(await store.giveBack(t, 27n, since(c))).toBe(true);
        } else {
          // a multi-store set: b names its store; an ID of another residue class is refused
          expect(await store.giveBack(t, b.maxId - 4n * s, since(b))).toBe(true);
          expect(await store.giveBack(t, b.maxId - 1n, since(b))).toBe(false);
          const kept = idsOf(b).slice(0, 6).map(String);
          const more: Allocation[] = [];
          for (let i = 0; i < 2 * stride; i++) more.push(await store.allocate(t));
          const ids = new Set(more.flatMap((x) => idsOf(x).map(String)));
          for (const id of [...idsOf(a).map(String), ...kept]) expect(ids.has(id)).toBe(false);
          // the tail that went back is handed out again by b's store
          expect(ids.has(String(idsOf(b)[6]))).toBe(true);
        }
      });

      it('with the fence epoch of the last answer: refused once a fence happened after it', async () => {
        const t = tag('give-fence');
        await store.createTag({ tag: t, step: 10, start: 1n });
        for (let i = 1; i < stride; i++) await store.allocate(t);
        const a = await store.allocate(t);
        const s = BigInt(stride);
        // a fence below max_id leaves max_id alone but bumps the epoch: the tail must not come back
        await store.fence(t, 2n);
        expect(await store.giveBack(t, a.maxId - 3n * s, since(a))).toBe(false);
        const after = await store.getTag(t);
        expect(after?.maxId).toBe((await store.getTag(t))?.maxId);
        // with the current epoch it matches again
        const b = await store.allocate(t);
        expect(await store.giveBack(t, b.maxId - 3n * s, since(b))).toBe(true);
      });

      it('false for a missing tag, INVALID_ARGUMENT for a raise or a negative target', async () => {
        const t = tag('give-missing');
        expect(await store.giveBack(t, 5n, { maxId: 10n, fenceEpoch: 0, generation: '0' })).toBe(false);
        expect(await store.getTag(t)).toBeUndefined();
        await store.createTag({ tag: t, step: 10, start: 1n });
        const a = await store.allocate(t);
        expect(await codeOf(store.giveBack(t, a.maxId + 1n, since(a)))).toBe('INVALID_ARGUMENT');
        expect(await codeOf(store.giveBack(t, -1n, since(a)))).toBe('INVALID_ARGUMENT');
        if (stride === 1) expect((await store.getTag(t))?.maxId).toBe(a.maxId);
      });

      it('exact beyond 2^53', async () => {
        const t = tag('give-big');
        const start = 9007199254740993n; // 2^53 + 1
        await store.createTag({ tag: t, step: 10, start });
        const a = await store.allocate(t);
        const back = a.maxId - 7n * BigInt(stride);
        expect(await store.giveBack(t, back, since(a))).toBe(true);
        if (stride === 1) {
          expect((await store.getTag(t))?.maxId).toBe(start + 3n);
          expect(idsOf(await store.allocate(t))[0]).toBe(start + 3n);
        }
      });
    });

    describe('re-create then give back (a tag deleted and created again is another tag)', () => {
      it('every creation gets a generation that never repeats, and each range carries it', async () => {
        const t = tag('generation');
        const seen = new Set<string>();
        for (let i = 0; i < 12; i++) {
          const created = await store.createTag({ tag: t, step: 10, start: 1n });
          expect(created.generation).toMatch(/\S/);
          expect(seen.has(created.generation)).toBe(false);
          seen.add(created.generation);
          expect((await store.getTag(t))?.generation).toBe(created.generation);
          expect((await store.listTags()).find((x) => x.tag === t)?.generation).toBe(created.generation);
          const a = await store.allocate(t);
          if (stride === 1) expect(a.generation).toBe(created.generation);
          // a fence and an update keep the generation: they change the tag, not which tag it is
          await store.fence(t, 5n);
          await store.updateTag(t, { step: 11 });
          expect((await store.getTag(t))?.generation).toBe(created.generation);
          await store.deleteTag(t);
        }
      });

      it('a give-back from the deleted tag never lands on the new one, even at the same max_id and fence epoch', async () => {
        const t = tag('recreate');
        await store.createTag({ tag: t, step: 10, start: 1n });
        // the old tag: a server holds the last ranges of each store
        const old: Allocation[] = [];
        for (let i = 0; i < 2 * stride; i++) old.push(await store.allocate(t));
        const last = old[old.length - 1] as Allocation;
        await store.deleteTag(t);
        await store.createTag({ tag: t, step: 10, start: 1n });
        // another server takes the same ranges from the new tag (and hands them out)
        const again: Allocation[] = [];
        for (let i = 0; i < 2 * stride; i++) again.push(await store.allocate(t));
        const now = again[again.length - 1] as Allocation;
        // what made the old compare-and-set match: the same max_id and fence epoch
        expect(now.maxId).toBe(last.maxId);
        expect(now.fenceEpoch).toBe(last.fenceEpoch);
        expect(now.generation).not.toBe(last.generation);
        const before = await store.getTag(t);
        const s = BigInt(stride);
        // the first server's clean shutdown gives back its tail with the old tag's values: refused, nothing moves
        expect(await store.giveBack(t, last.maxId - 5n * s, since(last))).toBe(false);
        expect((await store.getTag(t))?.maxId).toBe(before?.maxId);
        const handedOut = new Set(again.flatMap((x) => idsOf(x).map(String)));
        const next: Allocation[] = [];
        for (let i = 0; i < stride; i++) next.push(await store.allocate(t));
        for (const id of next.flatMap((x) => idsOf(x).map(String))) expect(handedOut.has(id)).toBe(false);
        // the new tag's own last answer still gives back
        const mine = next[next.length - 1] as Allocation;
        expect(await store.giveBack(t, mine.maxId - 3n * s, since(mine))).toBe(true);
      });
    });

    describe('rollback scenario', () => {
      it('after a restore of an old max_id the store answers the old range again (the guard is in the service)', async () => {
        const t = tag('rollback');
        await store.createTag({ tag: t, step: 10, start: 1n });
        await store.allocate(t);
        const snap = await h.snapshot(t);
        const handedOut: Allocation[] = [];
        for (let i = 0; i < 3 * stride; i++) handedOut.push(await store.allocate(t));
        const seen = expectDisjoint(handedOut);
        await h.restore(t, snap);
        const again = await store.allocate(t);
        // the store did what it was told: it answers IDs it has answered before
        expect(idsOf(again).some((id) => seen.has(id.toString()))).toBe(true);
        if (stride === 1) {
          expect(again.maxId).toBe(handedOut[0]?.maxId);
          expect(again.fenceEpoch).toBe(0);
        }
        // the operator's fence then moves it above everything handed out
        let top = 0n;
        for (const a of handedOut) if (a.maxId > top) top = a.maxId;
        const f = await store.fence(t, top);
        expect(f.fenceEpoch).toBe(1);
        const after = await store.allocate(t);
        expect(after.fenceEpoch).toBe(1);
        expect(idsOf(after).every((id) => !seen.has(id.toString()) && id >= top)).toBe(true);
      });
    });

    describe('range ledger (no range issued without its ledger row)', () => {
      it('records each allocation and give-back in the same write, and traces an ID to it', async () => {
        if (h.noLedger) {
          // Declared without one: then it must not pretend to keep one.
          expect(store.ledgerEntries ?? store.rangesContaining ?? store.pruneLedger ?? store.ledgerTop).toBeUndefined();
          return;
        }
        if (!store.ledgerEntries || !store.rangesContaining || !store.pruneLedger) {
          expect.fail(`${name} keeps no range ledger`);
          return;
        }
        const t = tag('ledger');
        await store.createTag({ tag: t, step: 10, start: 1n });
        const allocs: Allocation[] = [];
        for (let i = 0; i < 3 * stride; i++) allocs.push(await store.allocate(t, i === 0 ? 7 : undefined));
        const entries = (await store.ledgerEntries(t)).filter((e) => e.kind === 'allocate');
        expect(entries).toHaveLength(allocs.length);
        for (const a of allocs) {
          const ids = idsOf(a);
          const e = entries.find((x) => x.first === ids[0]);
          expect(e, `a ledger row for the range starting at ${ids[0]}`).toBeDefined();
          expect(e).toMatchObject({
            tag: t,
            last: ids[ids.length - 1],
            stride,
            step: a.step,
            fenceEpoch: a.fenceEpoch,
            generation: a.generation,
          });
          expect(e?.host).not.toBe('');
          expect(e?.pid).toBeGreaterThan(0);
          expect(e?.instance).not.toBe('');
          expect(Math.abs((e?.atMs ?? 0) - Date.now())).toBeLessThan(120_000);
          const mid = ids[Math.floor(ids.length / 2)] as bigint;
          const found = await store.rangesContaining(t, mid);
          expect(found.map((x) => x.first)).toEqual([ids[0]]);
        }
        // an ID no range covers: nothing
        const top = allocs.reduce((m, a) => (a.maxId > m ? a.maxId : m), 0n);
        expect(await store.rangesContaining(t, top + 1000n * BigInt(stride))).toEqual([]);
        expect(await store.rangesContaining(`${t}-other`, idsOf(allocs[0] as Allocation)[0] as bigint)).toEqual([]);
        // a give-back is recorded as such, with its range
        const last = allocs[allocs.length - 1] as Allocation;
        const s = BigInt(stride);
        expect(await store.giveBack(t, last.maxId - 4n * s, since(last))).toBe(true);
        const back = (await store.ledgerEntries(t)).filter((e) => e.kind === 'give-back');
        expect(back).toHaveLength(1);
        expect(back[0]).toMatchObject({ first: last.maxId - 4n * s, step: 4 });
        // a refused give-back records nothing
        expect(await store.giveBack(t, last.maxId - 2n * s, since(last))).toBe(false);
        expect((await store.ledgerEntries(t)).filter((e) => e.kind === 'give-back')).toHaveLength(1);
        // a fence records the IDs it jumps over (declared possibly issued); a fence that raises nothing records nothing
        const bound = (await store.getTag(t))?.maxId as bigint;
        await store.fence(t, bound + 50n * s);
        await store.fence(t, 1n);
        const fenced = (await store.ledgerEntries(t)).filter((e) => e.kind === 'fence');
        expect(fenced.length).toBeGreaterThanOrEqual(1);
        expect(fenced.length).toBeLessThanOrEqual(stride);
        const inside = bound + 10n * s;
        const hit = await store.rangesContaining(t, inside);
        expect(hit.map((e) => e.kind)).toEqual(['fence']);
        expect(hit[0]?.fenceEpoch).toBeGreaterThanOrEqual(1);
      });

      it('reads the ledger in order of first (as numbers), and page by page with every entry once', async () => {
        if (h.noLedger) return;
        if (!store.ledgerEntries || !store.ledgerPage) {
          expect.fail(`${name} keeps no range ledger`);
          return;
        }
        const t = tag('ledger-order');
        await store.createTag({ tag: t, step: 10, start: 1n });
        // First IDs of 1, 2 and 3 digits: a text order would put 101 before 11.
        for (let i = 0; i < 12 * stride; i++) await store.allocate(t);
        const last = await store.allocate(t);
        expect(await store.giveBack(t, last.maxId - 3n * BigInt(stride), since(last))).toBe(true);
        const all = await store.ledgerEntries(t);
        expect(all.filter((e) => e.kind === 'allocate')).toHaveLength(12 * stride + 1);
        const firsts = all.map((e) => e.first);
        expect(firsts).toEqual([...firsts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        const paged: typeof all = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const p = await store.ledgerPage(t, cursor, 4);
          paged.push(...p.entries);
          cursor = p.next;
          pages++;
        } while (cursor !== undefined && pages < 1000);
        expect(pages).toBeGreaterThanOrEqual(3);
        const key = (e: (typeof all)[number]) => `${e.kind}:${e.first}:${e.last}`;
        expect(paged.map(key).sort()).toEqual(all.map(key).sort());
      });

      it("answers the top of a name's ranges across its deletes and re-creations, a give-back not lowering it", async () => {
        if (h.noLedger) return;
        if (!store.ledgerTop) {
          expect.fail(`${name} keeps no range ledger top`);
          return;
        }
        const t = tag('top');
        expect(await store.ledgerTop(t)).toBeUndefined();
        const before = Date.now();
        await store.createTag({ tag: t, step: 10, start: 1n });
        let top = 0n;
        const take = async () => {
          const a = await store.allocate(t);
          const last = idsOf(a).at(-1) as bigint;
          if (last > top) top = last;
          return a;
        };
        for (let i = 0; i < 3 * stride; i++) await take();
        const last = await take();
        // The tail given back may have been taken again by the time anyone asks: it still counts.
        expect(await store.giveBack(t, last.maxId - 3n * BigInt(stride), since(last))).toBe(true);
        expect((await store.ledgerTop(t))?.last).toBe(top);
        await store.deleteTag(t);
        await store.createTag({ tag: t, step: 10, start: 1n });
        await store.allocate(t);
        const after = await store.ledgerTop(t);
        expect(after?.last).toBe(top);
        // the store's clock (MySQL's, Redis's) may differ from this process's by a little
        expect(after?.oldestAtMs).toBeGreaterThan(before - 60_000);
        expect(after?.oldestAtMs).toBeLessThan(Date.now() + 60_000);
      });

      it('prunes old entries in small batches', async () => {
        if (!store.ledgerEntries || !store.pruneLedger) return;
        const t = tag('prune');
        await store.createTag({ tag: t, step: 5, start: 1n });
        for (let i = 0; i < 3; i++) await store.allocate(t);
        expect(await store.pruneLedger(Date.now() - 3_600_000, 10)).toBe(0);
        expect((await store.ledgerEntries(t)).length).toBe(3);
        // this store's ledger is its own (unique table, file or key prefix): pruning everything up to now is safe here
        await new Promise((r) => setTimeout(r, 5));
        const before = Date.now() + 1;
        const first = await store.pruneLedger(before, 1);
        expect(first).toBeGreaterThanOrEqual(1);
        expect(first).toBeLessThanOrEqual(stride);
        let n = first;
        for (let k = 0; k < 1000 && (await store.ledgerEntries(t)).length > 0; k++) n += await store.pruneLedger(before, 2);
        expect(await store.ledgerEntries(t)).toEqual([]);
        expect(n).toBeGreaterThanOrEqual(3);
      });
    });

    describe('reachability', () => {
      it('ping resolves', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });
    });

    const url = () => h.url;
    if (shared) {
      describe('several processes', () => {
        it('four processes allocating at once get disjoint ranges', async () => {
          expect(url(), 'a store other processes can reach has a URL').toBeDefined();
          const dist = await ensureDist();
          const t = tag('procs');
          await store.createTag({ tag: t, step: 3, start: 1n });
          const script = fileURLToPath(new URL('./allocate-child.mjs', import.meta.url));
          const runs = await Promise.all(Array.from({ length: 4 }, () => runChild(script, [dist, url() as string, t, '150', '8'])));
          const allocs: Allocation[] = runs.flat();
          expect(allocs).toHaveLength(600);
          expectDisjoint(allocs);
          // every range any process was answered has its ledger row
          if (store.ledgerEntries) {
            const rows = (await store.ledgerEntries(t)).filter((e) => e.kind === 'allocate');
            const starts = new Set(rows.map((e) => e.first.toString()));
            expect(rows).toHaveLength(600);
            for (const a of allocs) expect(starts.has(String(idsOf(a)[0]))).toBe(true);
            expect(new Set(rows.map((e) => e.pid)).size).toBe(4);
          }
          if (stride === 1) expect((await store.getTag(t))?.maxId).toBe(1n + 600n * 3n);
        }, 120_000);
      });
    }

    if (shared) {
      describe('close', () => {
        it('a second instance on the same backend sees the state; close resolves, twice', async () => {
          expect(h.reopen, 'a store on a shared backend can be reopened').toBeDefined();
          if (!h.reopen) return;
          const t = tag('reopen');
          await store.createTag({ tag: t, step: 5, start: 1n });
          const a = await store.allocate(t);
          const other = await h.reopen();
          await other.init();
          const b = await other.allocate(t);
          expectDisjoint([a, b]);
          expect((await other.getTag(t))?.step).toBe(5);
          await other.close();
          await other.close();
        });

        it('several instances init the schema at once, and each sees what another wrote', async () => {
          expect(h.reopen, 'a store on a shared backend can be reopened').toBeDefined();
          if (!h.reopen) return;
          const reopen = h.reopen;
          const others = await Promise.all(Array.from({ length: 4 }, () => reopen()));
          try {
            await Promise.all(others.map((s) => s.init()));
            const t = tag('init-race');
            await others[0]?.createTag({ tag: t });
            expect((await others[3]?.getTag(t))?.step).toBe(1000);
          } finally {
            await Promise.all(others.map((s) => s.close()));
          }
        });
      });
    }

    describe('a store behind a network', () => {
      it('reconnects by itself after the server drops its connections (as on a server restart)', async (ctx) => {
        if (!h.dropConnections) return ctx.skip();
        const t = tag('reconnect');
        await store.createTag({ tag: t, step: 10 });
        const a = await store.allocate(t);
        expect(await h.dropConnections(), "the server dropped at least one of the store's connections").toBeGreaterThan(0);
        await new Promise((r) => setTimeout(r, 200));
        const b = await allocateAfterReconnect(store, t, 20, 100);
        expect(b?.maxId).toBe(a.maxId + 10n * BigInt(stride));
      });

      it('answers STORE_UNAVAILABLE quickly when the server is unreachable', async (ctx) => {
        if (!h.unreachable) return ctx.skip();
        await expectUnavailableQuickly(h.unreachable());
      });

      it('rejects a table name that is not a plain identifier', (ctx) => {
        if (!h.withName) return ctx.skip();
        const build = h.withName;
        for (const name of ['Sequoia', 'a;drop table x', '1abc', 'a'.repeat(64), '']) {
          expect(() => build(name), name).toThrow(/store: table/);
        }
      });
    });
  });
}

interface ChildAllocation {
  maxId: string;
  step: number;
  storedStep: number;
  fenceEpoch: number;
  generation: string;
  stride?: number;
  offset?: number;
}

function runChild(script: string, args: string[]): Promise<Allocation[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`child exited with ${code}: ${err}`));
        return;
      }
      const parsed = JSON.parse(out) as ChildAllocation[];
      resolve(parsed.map((a) => ({ ...a, maxId: BigInt(a.maxId) })));
    });
  });
}

/**
 * Shared by the server-backed suites: a store pointed at a closed port answers
 * STORE_UNAVAILABLE on init, allocate and ping, within 5 s in all.
 */
/**
 * For the stores on a peer's table (Leaf, Tinyid), whose admins create rows
 * with SQL Sequoia never sees: a row made by `insertRow` (the peer's SQL) or
 * by `createTag`, deleted with the store's `deleteTag` and inserted again with
 * `insertRow`, is another creation, so a give-back from the deleted row fails.
 */
export async function expectSqlRecreateIsAnotherCreation(
  store: SegmentStore,
  insertRow: (tag: string) => Promise<void>,
  peer: string,
): Promise<void> {
  for (const madeBy of [peer, 'sequoia']) {
    const t = `recreate-sql-${madeBy}-${process.pid}`;
    if (madeBy === 'sequoia') await store.createTag({ tag: t, step: 10, start: 1n });
    else await insertRow(t);
    await store.allocate(t);
    const last = await store.allocate(t);
    await store.deleteTag(t);
    await insertRow(t);
    await store.allocate(t);
    const now = await store.allocate(t);
    // what would let the old compare-and-set match: the same max_id and fence epoch
    expect(now.maxId).toBe(last.maxId);
    expect(now.fenceEpoch).toBe(last.fenceEpoch);
    expect(now.generation).not.toBe(last.generation);
    expect(await store.giveBack(t, last.maxId - 5n, since(last))).toBe(false);
    expect((await store.getTag(t))?.maxId).toBe(now.maxId);
  }
}

/**
 * The stored-ID range rule (kit/segment/segment-rules.ts `assertStoredId`): a fence
 * bound or a new tag's start outside 0..2^63-1 is INVALID_ARGUMENT, and the
 * tag keeps its max_id and fence epoch. Exported so that a planted store
 * without the rule can show this case catches it (test/contract/planted-rules.test.ts).
 */
export async function expectStoredIdRangeChecked(store: SegmentStore, t: string): Promise<void> {
  for (const start of [-1n, MAX_ID + 1n]) {
    expect(await codeOf(store.createTag({ tag: `${t}-s${start < 0n ? 'neg' : 'big'}`, start }))).toBe('INVALID_ARGUMENT');
  }
  await store.createTag({ tag: t, step: 10, start: 1n });
  await store.allocate(t);
  const before = await store.getTag(t);
  for (const to of [-1n, MAX_ID + 1n, MAX_ID + 1000n]) {
    expect(await codeOf(store.fence(t, to))).toBe('INVALID_ARGUMENT');
  }
  const after = await store.getTag(t);
  expect(after?.maxId).toBe(before?.maxId);
  expect(after?.fenceEpoch).toBe(before?.fenceEpoch);
}

export async function expectUnavailableQuickly(store: SegmentStore): Promise<void> {
  const t0 = Date.now();
  await expect(store.init()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  await expect(store.allocate('x')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  await expect(store.ping()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  expect(Date.now() - t0).toBeLessThan(5000);
  await store.close();
}

/** After the server dropped the store's connections: allocations work again within a few tries. */
export async function allocateAfterReconnect(
  store: SegmentStore,
  tag: string,
  tries: number,
  delayMs: number,
): Promise<Allocation | undefined> {
  let b: Allocation | undefined;
  for (let i = 0; i < tries && !b; i++) {
    b = await store.allocate(tag).catch(() => undefined);
    if (!b) await new Promise((r) => setTimeout(r, delayMs));
  }
  return b;
}
