/**
 * The one contract every WorkerLeaseStore runs (memory, SQLite, PostgreSQL,
 * MySQL/MariaDB), as the segment stores run theirs. Each case works in
 * spaces of its own (random names), since other test files use the same
 * servers at the same time; stores that several processes share also give
 * `reopen`, and then independent instances race for ids in one space.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansAt } from '../../src/core/snowflake/holding-index.js';
import type { LeaseHolder, LeaseHolding } from '../../src/ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, WorkerLeaseStore } from '../../src/ports/worker-lease-store.js';

export interface LeaseHarness {
  readonly store: WorkerLeaseStore;
  /** A second, independent instance on the same backend (stores other processes can share). */
  reopen?(): Promise<WorkerLeaseStore>;
  /** Removes the rows of the given spaces and closes. */
  cleanup(spaces: readonly string[]): Promise<void>;
  /** Makes the ledger rows of the given spaces `ms` older (the store's clock moves on, for memory). */
  backdate(spaces: readonly string[], ms: number): Promise<void>;
}

export type LeaseFactory = () => Promise<LeaseHarness>;

function isRecord(r: LeaseRecord | { refused: string }): r is LeaseRecord {
  return !('refused' in r);
}

async function take(store: WorkerLeaseStore, req: AcquireRequest): Promise<LeaseRecord> {
  const r = await store.acquire(req);
  if (!isRecord(r)) throw new Error(`refused: ${r.refused}`);
  return r;
}

/** Who held a worker id at a tick, as `sequoia explain --store` asks the ledger. */
async function holdersAt(store: WorkerLeaseStore, s: string, workerId: number, tick: number): Promise<readonly LeaseHolding[]> {
  return spansAt(await store.holdings(s, workerId), tick);
}

/** The lease `owner` holds on `l`'s worker id and generation in space `s`. */
const heldBy = (s: string, l: { readonly workerId: number; readonly generation: number }, owner: string): HeldLease => ({
  space: s,
  workerId: l.workerId,
  owner,
  generation: l.generation,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `shared`: other processes can open the same store (SQLite file, SQL servers); the harness then gives `reopen`. */
export function runWorkerLeaseStoreContract(name: string, factory: LeaseFactory, options: { readonly shared: boolean }): void {
  describe(`WorkerLeaseStore contract: ${name}`, () => {
    let h: LeaseHarness;
    const spaces: string[] = [];
    const space = (): string => {
      const s = `test-${process.pid}-${randomBytes(4).toString('hex')}`;
      spaces.push(s);
      return s;
    };
    const req = (s: string, owner: string, more: Partial<AcquireRequest> = {}): AcquireRequest => ({
      space: s,
      owner,
      ttlMs: 10_000,
      workerCount: 4,
      ...more,
    });

    beforeAll(async () => {
      h = await factory();
      await h.store.init();
    });
    afterAll(async () => {
      await h?.cleanup(spaces);
    });

    it('init again (this instance, and a new one on a shared backend) keeps every lease and its last tick', async () => {
      const s = space();
      const a = await take(h.store, req(s, 'a', { ttlMs: 20_000 }));
      await h.store.renew(heldBy(s, a, 'a'), 20_000, 1234);
      await h.store.init();
      const others = h.reopen ? [await h.reopen()] : [];
      try {
        for (const o of others) await o.init();
        for (const store of [h.store, ...others]) {
          // The lease survived: another owner is refused that id, and its holder sees the tick it reported.
          expect(await store.acquire(req(s, 'b', { want: a.workerId }))).toEqual({
            refused: expect.stringContaining(`worker id ${a.workerId} is held by a`),
          });
        }
        expect(await take(h.store, req(s, 'a', { want: a.workerId }))).toMatchObject({ workerId: a.workerId, lastTick: 1234 });
      } finally {
        for (const o of others) await o.close();
      }
    });

    it('the first holder of a space gets id 0, generation 1, never used (-1), expiring about ttl from now', async () => {
      const s = space();
      const r = await take(h.store, req(s, 'a', { ttlMs: 10_000 }));
      expect(r).toMatchObject({ workerId: 0, generation: 1, lastTick: -1 });
      // The store's clock (the database server's on SQL) is this machine's here.
      expect(Math.abs(r.expiresAtMs - (Date.now() + 10_000))).toBeLessThan(5_000);
    });

    it('live holders get different ids, lowest first; a space full of live leases is refused', async () => {
      const s = space();
      const ids = [];
      for (const owner of ['a', 'b', 'c']) ids.push((await take(h.store, req(s, owner, { workerCount: 3 }))).workerId);
      expect(ids).toEqual([0, 1, 2]);
      const full = await h.store.acquire(req(s, 'd', { workerCount: 3 }));
      expect(full).toEqual({ refused: expect.stringContaining('all 3 worker ids') });
    });

    it('spaces are independent', async () => {
      const [s1, s2] = [space(), space()];
      expect((await take(h.store, req(s1, 'a'))).workerId).toBe(0);
      expect((await take(h.store, req(s2, 'b'))).workerId).toBe(0);
    });

    it('want takes exactly that id; another owner is refused while the lease lives, the same owner is not', async () => {
      const s = space();
      const a = await take(h.store, req(s, 'a', { want: 2 }));
      expect(a).toMatchObject({ workerId: 2, generation: 1 });
      const b = await h.store.acquire(req(s, 'b', { want: 2 }));
      expect(b).toEqual({ refused: expect.stringContaining('worker id 2 is held by a') });
      const again = await take(h.store, req(s, 'a', { want: 2 }));
      expect(again).toMatchObject({ workerId: 2, generation: 2 });
    });

    it('exclude skips ids this process already holds', async () => {
      const s = space();
      expect((await take(h.store, req(s, 'a', { exclude: [0, 1] }))).workerId).toBe(2);
    });

    it('renew extends the lease and keeps the highest tick; a stale generation or owner gets undefined', async () => {
      const s = space();
      const a = await take(h.store, req(s, 'a', { ttlMs: 5_000 }));
      const r1 = await h.store.renew(heldBy(s, a, 'a'), 20_000, 100);
      expect(r1).toMatchObject({ workerId: a.workerId, generation: a.generation, lastTick: 100 });
      expect(r1!.expiresAtMs).toBeGreaterThan(a.expiresAtMs);
      const r2 = await h.store.renew(heldBy(s, a, 'a'), 20_000, 50);
      expect(r2?.lastTick).toBe(100);
      expect(await h.store.renew({ ...heldBy(s, a, 'a'), generation: a.generation + 1 }, 20_000, 200)).toBeUndefined();
      expect(await h.store.renew(heldBy(s, a, 'b'), 20_000, 200)).toBeUndefined();
    });

    it('release frees the id at once; the next holder gets it with the last tick and a new generation', async () => {
      const s = space();
      const a = await take(h.store, req(s, 'a'));
      await take(h.store, req(s, 'b'));
      await h.store.release(heldBy(s, a, 'a'), 777);
      const c = await take(h.store, req(s, 'c'));
      expect(c).toMatchObject({ workerId: a.workerId, generation: a.generation + 1, lastTick: 777 });
    });

    it('a release with a stale generation is a no-op: the new holder keeps its lease', async () => {
      const s = space();
      const a = await take(h.store, req(s, 'a', { want: 1 }));
      await h.store.release(heldBy(s, a, 'a'), 10);
      const b = await take(h.store, req(s, 'b', { want: 1 }));
      await h.store.release(heldBy(s, a, 'a'), 5);
      expect(await h.store.acquire(req(s, 'c', { want: 1 }))).toEqual({ refused: expect.stringContaining('held by b') });
      expect(await h.store.renew(heldBy(s, b, 'b'), 10_000, 11)).toMatchObject({ lastTick: 11 });
    });

    it('an expired lease is taken over, lowest expired id first, after the last renewed tick', async () => {
      const s = space();
      const a = await take(h.store, req(s, 'a', { ttlMs: 200 }));
      await take(h.store, req(s, 'b', { ttlMs: 60_000 }));
      await h.store.renew(heldBy(s, a, 'a'), 200, 4242);
      await sleep(450);
      const c = await take(h.store, req(s, 'c'));
      expect(c).toMatchObject({ workerId: a.workerId, generation: a.generation + 1, lastTick: 4242 });
      expect(await h.store.renew(heldBy(s, a, 'a'), 10_000, 5000)).toBeUndefined();
    });

    it('registerNode answers a new id on every call', async () => {
      const s = space();
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push((await h.store.registerNode(s, `host-${i}`, 2 ** 40)).workerId);
      expect(new Set(ids).size).toBe(5);
      expect(ids.every((id) => Number.isSafeInteger(id) && id >= 0)).toBe(true);
    });

    it('a registerNode id is held for good: acquire never answers it, want is refused', async () => {
      const s = space();
      const n = await h.store.registerNode(s, 'node-a', 2 ** 40);
      expect(n.lastTick).toBe(-1);
      // Every id below the node's is excluded, so the lowest free one would be the node's own.
      const below = Array.from({ length: n.workerId }, (_, i) => i);
      const r = await take(h.store, req(s, 'a', { workerCount: n.workerId + 2, exclude: below }));
      expect(r.workerId).toBe(n.workerId + 1);
      expect(await h.store.acquire(req(s, 'b', { workerCount: n.workerId + 2, want: n.workerId }))).toEqual({
        refused: expect.stringContaining(`worker id ${n.workerId} is held by worker-node:node-a for good`),
      });
    });

    it('registerNode skips ids held by live leases, and takes an expired one after its last tick', async () => {
      const s = space();
      const n = (await h.store.registerNode(s, 'node-a', 2 ** 40)).workerId;
      const live = Array.from({ length: 10 }, (_, i) => n + 1 + i);
      for (const id of live) await take(h.store, req(s, `l${id}`, { workerCount: n + 64, want: id, ttlMs: 60_000 }));
      const next = await h.store.registerNode(s, 'node-b', 2 ** 40);
      expect(next.workerId).toBeGreaterThan(n + 10);
      const short = Array.from({ length: 10 }, (_, i) => next.workerId + 1 + i);
      for (const id of short) {
        const l = await take(h.store, req(s, `e${id}`, { workerCount: next.workerId + 64, want: id, ttlMs: 200 }));
        await h.store.renew(heldBy(s, { workerId: id, generation: l.generation }, `e${id}`), 200, 1000 + id);
      }
      await sleep(450);
      const late = await h.store.registerNode(s, 'node-c', 2 ** 40);
      // The store's other users may have inserted node rows meanwhile, but not ten.
      expect(short).toContain(late.workerId);
      expect(late.lastTick).toBe(1000 + late.workerId);
      expect(await h.store.renew(heldBy(s, { workerId: late.workerId, generation: 1 }, `e${late.workerId}`), 10_000, 5000)).toBeUndefined();
    });

    it('registerNode answers an id at or past workerCount without claiming it', async () => {
      const s = space();
      const n = await h.store.registerNode(s, 'node-a', 1);
      expect(n.workerId).toBeGreaterThanOrEqual(1);
      expect(await take(h.store, req(s, 'a', { workerCount: n.workerId + 1, want: n.workerId }))).toMatchObject({
        workerId: n.workerId,
        generation: 1,
      });
    });

    it('concurrent acquires on one instance never hand out one id twice', async () => {
      const s = space();
      const got = await Promise.all(Array.from({ length: 8 }, (_, i) => h.store.acquire(req(s, `o${i}`, { workerCount: 6 }))));
      const ids = got.filter(isRecord).map((r) => r.workerId);
      expect(ids.length).toBe(6);
      expect(new Set(ids).size).toBe(6);
      expect(got.filter((r) => !isRecord(r))).toHaveLength(2);
    });

    if (!options.shared) return;
    /** Runs `fn` on this store and three independent instances of it. */
    async function withInstances(fn: (all: readonly WorkerLeaseStore[]) => Promise<void>): Promise<void> {
      if (!h.reopen) throw new Error('a shared store must give reopen');
      const others = await Promise.all(Array.from({ length: 3 }, () => h.reopen!()));
      try {
        await Promise.all(others.map((o) => o.init()));
        await fn([h.store, ...others]);
      } finally {
        await Promise.all(others.map((o) => o.close()));
      }
    }

    it('independent instances racing in one space never share an id', async () => {
      const s = space();
      await withInstances(async (all) => {
        const got = await Promise.all(
          Array.from({ length: 12 }, (_, i) => all[i % all.length]!.acquire(req(s, `p${i}`, { workerCount: 10 }))),
        );
        const ids = got.filter(isRecord).map((r) => r.workerId);
        expect(ids.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });
    });

    it('registerNode and acquire racing on independent instances never share an id', async () => {
      const s = space();
      await withInstances(async (all) => {
        const n = (await h.store.registerNode(s, 'node-0', 2 ** 40)).workerId;
        // Leases start just above the last node id, where the next node rows land.
        const lease = { workerCount: n + 64, exclude: Array.from({ length: n }, (_, i) => i) };
        const got = await Promise.all(
          Array.from({ length: 12 }, async (_, i) => {
            const store = all[i % all.length]!;
            if (i % 2 === 0) return (await store.registerNode(s, `node-${i}`, 2 ** 40)).workerId;
            return (await take(store, req(s, `p${i}`, lease))).workerId;
          }),
        );
        expect(new Set([n, ...got]).size).toBe(13);
      });
    });

    describe('the lease ledger', () => {
      const holder: LeaseHolder = { host: 'host-a', pid: 4242, instance: 'inst-a', version: '9.9.9' };

      it('a grant, each renewal horizon and the release are rows with the holder; the holding covers [first tick, released tick]', async () => {
        const s = space();
        const a = await take(h.store, req(s, 'host-a/4242/inst-a', { nowTick: 1000, holder }));
        await h.store.renew(heldBy(s, a, 'host-a/4242/inst-a'), 10_000, 1500);
        await h.store.renew(heldBy(s, a, 'host-a/4242/inst-a'), 10_000, 2000);
        await h.store.release(heldBy(s, a, 'host-a/4242/inst-a'), 1800);
        const rows = await h.store.entries(s, a.workerId);
        expect(rows.map((r) => [r.kind, r.generation, r.fromTick, r.untilTick])).toEqual([
          ['grant', a.generation, 1000, 999],
          ['renew', a.generation, 1000, 1500],
          ['renew', a.generation, 1000, 2000],
          ['release', a.generation, 1000, 1800],
        ]);
        for (const r of rows) {
          expect(r).toMatchObject({ space: s, workerId: a.workerId, owner: 'host-a/4242/inst-a', holder });
          expect(Math.abs(r.atMs - Date.now())).toBeLessThan(60_000);
        }
        const held = {
          workerId: a.workerId,
          generation: a.generation,
          began: 'grant',
          holder,
          fromTick: 1000,
          untilTick: 1800,
          released: true,
        };
        expect(await h.store.holdings(s)).toEqual([expect.objectContaining(held)]);
        expect(await holdersAt(h.store, s, a.workerId, 1000)).toEqual([expect.objectContaining(held)]);
        expect(await holdersAt(h.store, s, a.workerId, 1800)).toHaveLength(1);
        // Before its grant, and after its release (though it had reserved up to 2000), nobody held it.
        expect(await holdersAt(h.store, s, a.workerId, 999)).toEqual([]);
        expect(await holdersAt(h.store, s, a.workerId, 1801)).toEqual([]);
        expect(await holdersAt(h.store, s, a.workerId + 1, 1500)).toEqual([]);
      });

      it('holdings of one worker id leave out the others of the space', async () => {
        const s = space();
        const a = await take(h.store, req(s, 'a', { nowTick: 10 }));
        const b = await take(h.store, req(s, 'b', { nowTick: 20 }));
        expect((await h.store.holdings(s)).map((x) => [x.workerId, x.owner])).toEqual([
          [a.workerId, 'a'],
          [b.workerId, 'b'],
        ]);
        expect((await h.store.holdings(s, b.workerId)).map((x) => [x.workerId, x.owner, x.fromTick])).toEqual([[b.workerId, 'b', 20]]);
      });

      it("a lease that ran out is a takeover, starting after the old holder's horizon; a stale renewal or release writes nothing", async () => {
        const s = space();
        const a = await take(h.store, req(s, 'a', { ttlMs: 300, nowTick: 10 }));
        await h.store.renew(heldBy(s, a, 'a'), 300, 50);
        await sleep(450);
        // The new holder's clock says 20, but the old one may have issued up to 50.
        const b = await take(h.store, req(s, 'b', { want: a.workerId, nowTick: 20 }));
        expect(await h.store.renew(heldBy(s, a, 'a'), 300, 80)).toBeUndefined();
        await h.store.release(heldBy(s, a, 'a'), 80);
        await h.store.renew(heldBy(s, b, 'b'), 10_000, 100);
        const rows = await h.store.entries(s, a.workerId);
        expect(rows.map((r) => [r.kind, r.owner, r.fromTick, r.untilTick])).toEqual([
          ['grant', 'a', 10, 9],
          ['renew', 'a', 10, 50],
          ['takeover', 'b', 51, 50],
          ['renew', 'b', 51, 100],
        ]);
        expect((await holdersAt(h.store, s, a.workerId, 30)).map((x) => x.owner)).toEqual(['a']);
        expect((await holdersAt(h.store, s, a.workerId, 50)).map((x) => x.owner)).toEqual(['a']);
        expect((await holdersAt(h.store, s, a.workerId, 60)).map((x) => [x.owner, x.began, x.released])).toEqual([
          ['b', 'takeover', false],
        ]);
        expect(await holdersAt(h.store, s, a.workerId, 101)).toEqual([]);
        // The owner text names the holder when the request does not.
        expect(rows[0]?.holder).toEqual({ host: 'a', pid: 0, instance: '', version: '' });
      });

      it('a released id taken again is a grant, after the released tick', async () => {
        const s = space();
        const a = await take(h.store, req(s, 'x/1/one', { nowTick: 100 }));
        await h.store.renew(heldBy(s, a, 'x/1/one'), 10_000, 300);
        await h.store.release(heldBy(s, a, 'x/1/one'), 120);
        const b = await take(h.store, req(s, 'y/2/two', { nowTick: 90 }));
        expect(b.workerId).toBe(a.workerId);
        const rows = await h.store.entries(s, a.workerId);
        expect(rows.at(-1)).toMatchObject({
          kind: 'grant',
          owner: 'y/2/two',
          fromTick: 121,
          holder: { host: 'y', pid: 2, instance: 'two', version: '' },
        });
      });

      it('a worker-node claim is a grant held for good', async () => {
        const s = space();
        const n = await h.store.registerNode(s, 'node-host', 1_000_000);
        const rows = await h.store.entries(s, n.workerId);
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ kind: 'grant', owner: `worker-node:node-host`, fromTick: 0, untilTick: Number.MAX_SAFE_INTEGER });
        expect(await holdersAt(h.store, s, n.workerId, 2 ** 41)).toHaveLength(1);
      });

      it('prune removes rows past retention in batches, keeps newer rows and worker-node claims', async () => {
        const s = space();
        const old = space();
        const a = await take(h.store, req(s, 'p', { nowTick: 5 }));
        for (let t = 10; t <= 50; t += 10) await h.store.renew(heldBy(s, a, 'p'), 10_000, t);
        const node = await h.store.registerNode(old, 'node-host', 1_000_000);
        await h.backdate([s, old], 3 * 86_400_000);
        await h.store.renew(heldBy(s, a, 'p'), 10_000, 60);
        // Rows left over in a shared database may be pruned too: count only this space's.
        expect(await h.store.pruneLedger(86_400_000, 2)).toBeLessThanOrEqual(2);
        expect((await h.store.entries(s, a.workerId)).length).toBeLessThanOrEqual(6);
        while ((await h.store.pruneLedger(86_400_000, 2)) === 2);
        const left = await h.store.entries(s, a.workerId);
        // The newest row still carries the holding's first tick.
        expect(left.map((r) => [r.kind, r.fromTick, r.untilTick])).toEqual([['renew', 5, 60]]);
        expect(await holdersAt(h.store, s, a.workerId, 30)).toEqual([
          expect.objectContaining({ fromTick: 5, untilTick: 60, began: undefined }),
        ]);
        expect(await h.store.entries(old, node.workerId)).toHaveLength(1);
      });
    });
  });
}
