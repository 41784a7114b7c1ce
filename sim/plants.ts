/**
 * Planted bugs: holes the protocols had (or could have), put back for one
 * run so the simulator proves it finds them. Production code knows nothing
 * of them: each plant patches a production class from here for the length of
 * a run (and undoes it), or flips a switch of the simulated store or state dir.
 */
import { checkAnswer, checkShared, type GuardVerdict, type HighWaterMark } from '../src/core/segment/rollback-guard.js';
import type { Clock } from '../src/core/clock.js';
import type { HighWaterMarkStore } from '../src/ports/high-water-mark-store.js';
import type { SegmentStore } from '../src/ports/segment-store.js';
import { TagGuard } from '../src/service/tag-guard.js';
import { StrictTagAllocator } from '../src/service/strict-tag-allocator.js';
import type { Cluster } from './model/cluster.js';
import { LeasedWorker } from '../src/service/snowflake-lease.js';
import { MemoryWorkerLeaseStore } from '../src/adapters/memory/memory-worker-lease-store.js';
import type { SnowflakeGenerator } from '../src/core/snowflake/generator.js';
import type { Timer } from '../src/core/timers.js';
import type { HeldLease, LeaseRecord } from '../src/ports/worker-lease-store.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../src/ports/worker-id-provider.js';
import { RangeSet } from '../src/client/reserve.js';
import type { TagInfo } from '../src/ports/segment-store.js';
import { PeerTable } from './model/migrate-world.js';
import type { World } from './worlds.js';

export interface Plant {
  readonly what: string;
  /**
   * The world it is planted in: the segment cluster (default), the snowflake
   * world (which ignores `install`'s argument), or a world run after the
   * cluster's (sim/worlds.ts): the plant tests run only that one.
   */
  readonly world?: 'snowflake' | World;
  /** Turns the bug on; answers how to turn it off. */
  install(cluster: Cluster): () => void;
}

/** The private parts of TagGuard a plant rewrites (runtime access only). */
interface GuardInside {
  tag: string;
  deps: { marks: HighWaterMarkStore; clock: Clock; store: SegmentStore };
  refusedAtFenceEpoch: number | undefined;
  fenceCheckedAt: number;
  fenceCheck: Promise<void> | undefined;
  isClosed: boolean;
  readFloor(): Promise<ReadonlyMap<string, unknown>>;
  refuse(
    why: { reason: string; publicReason: string },
    trip: { readonly fenceEpoch: number; readonly generation: string | undefined },
  ): unknown;
  lift(): void;
}

/** The private parts of LeasedWorker the backup-worker plant rewrites. */
interface LeaseInside {
  grants: WorkerGrant[];
  lost: boolean;
  timer: Timer | undefined;
  renewing: Promise<void> | undefined;
  generator: SnowflakeGenerator;
  provider: WorkerIdProvider;
  space: IdSpace;
}

/** The private parts of MemoryWorkerLeaseStore the renewal plant rewrites. */
interface LeaseStoreInside {
  now(): number;
  rows(space: string): Map<number, { owner: string; generation: number; expiresAtMs: number; lastTick: number; workerId: number }>;
}

type Proto = Record<string, unknown>;
function patch(proto: object, name: string, fn: unknown): () => void {
  const p = proto as Proto;
  const orig = p[name];
  p[name] = fn;
  return () => {
    p[name] = orig;
  };
}

/**
 * The guard as it was before it kept the ranges it accepted (issue 42, sim
 * seed 17): an answer judged by the floor read before its request was sent
 * alone, the record only the highest end.
 */
function floorOnly(): () => void {
  return patchSharedAdmit((range, floor, current, where) => {
    const base = floor && current && current.mark < floor.mark ? current : floor;
    const tripped = current?.trippedAtEpoch !== undefined && range.fenceEpoch <= current.trippedAtEpoch;
    if (!tripped && checkAnswer(base && { mark: base.mark }, range.start, range.end, range.fenceEpoch).ok) {
      const record: HighWaterMark = { mark: current && current.mark > range.end ? current.mark : range.end };
      return { ok: true, record };
    }
    return checkShared(floor, current, range.start, range.end, range.fenceEpoch, where);
  });
}

type AnsweredRange = Parameters<TagGuard['admit']>[0];
type Judge = (range: AnsweredRange, floor: HighWaterMark | undefined, current: HighWaterMark | undefined, where?: string) => GuardVerdict;

/**
 * The guard's admit of a plain (stride 1) answer with its verdict from
 * `judge`, in one update of the marks, refusing as the guard does.
 */
function patchSharedAdmit(judge: Judge): () => void {
  const orig = TagGuard.prototype.admit;
  return patch(
    TagGuard.prototype,
    'admit',
    async function (this: GuardInside, range: AnsweredRange, floor: Parameters<TagGuard['admit']>[1], note = '') {
      if (range.stride !== 1) return orig.call(this as unknown as TagGuard, range, floor, note);
      const key = this.tag;
      let verdict: GuardVerdict | undefined;
      await this.deps.marks.update(key, (current) => {
        verdict = judge(range, floor.has(key) ? floor.get(key) : current, current, this.deps.marks.where);
        return verdict.record;
      });
      const v = verdict as GuardVerdict;
      if (v.ok) return { ok: true };
      const why = { reason: v.reason + note, publicReason: v.publicReason + note };
      const tripped = v.record.trippedAtEpoch;
      const trip = tripped === undefined ? range : { fenceEpoch: tripped, generation: v.record.trippedGeneration };
      return { ok: false, refusal: this.refuse(why, { fenceEpoch: trip.fenceEpoch, generation: trip.generation }) };
    },
  );
}

export const PLANTS: Record<string, Plant> = {
  'guard-floor-only': {
    what: 'the guard judges an answer by the floor read before its request was sent alone, not by the ranges the server accepted',
    install: floorOnly,
  },
  'giveback-no-generation': {
    what: "a clean shutdown gives its tail back into a deleted-and-re-created tag (the give-back's compare-and-set skips the generation; with the guard judging by floors alone: its ranges catch the repeat too)",
    install(c) {
      const unfloor = floorOnly();
      c.store.ignoreGenerationOnGiveBack = true;
      return () => {
        c.store.ignoreGenerationOnGiveBack = false;
        unfloor();
      };
    },
  },
  'missing-fsync': {
    what: 'a high-water mark answered before it is durable (no fsync before the IDs go out)',
    install(c) {
      for (const s of c.servers) s.dir.answerBeforeDurable = true;
      return () => {};
    },
  },
  'strict-pipeline-floor': {
    what: "a pipelined strict batch judged by the marks alone, before the previous batch's mark exists (with the guard judging by floors alone: its ranges catch this too)",
    install() {
      const unfloor = floorOnly();
      const unpipe = patch(StrictTagAllocator.prototype, 'aboveAnswered', (floor: unknown) => floor);
      return () => {
        unpipe();
        unfloor();
      };
    },
  },
  'guard-floor-after-send': {
    what: 'the guard reads its floor after the store answered, not before the request was sent',
    install() {
      const orig = TagGuard.prototype.admit;
      return patch(TagGuard.prototype, 'admit', async function (this: GuardInside, range: never, _floor: never, note?: string) {
        const late = await this.readFloor();
        return orig.call(this as unknown as TagGuard, range, late as never, note);
      });
    },
  },
  'giveback-trips-worker': {
    what: "a give-back by one worker trips another worker's guard (the floor read before the give-back lowered the mark wins)",
    install() {
      return patchSharedAdmit((range, floor, current, where) => {
        const raised = current && floor && current.mark < floor.mark ? { ...current, mark: floor.mark } : current;
        return checkShared(floor, raised, range.start, range.end, range.fenceEpoch, where);
      });
    },
  },
  'fence-recheck-wall-clock': {
    what: 'a refused tag re-reads its fence epoch timed on the wall clock: a clock stepped back holds the refusal after the fence',
    install() {
      return patch(TagGuard.prototype, 'recheckFence', function (this: GuardInside): Promise<boolean> {
        const at = this.refusedAtFenceEpoch;
        if (at === undefined || this.isClosed) return Promise.resolve(false);
        const now = this.deps.clock.now(); // the bug: wall time, not monotonicMs(clock)
        if (!this.fenceCheck && now - this.fenceCheckedAt >= 1000) {
          this.fenceCheckedAt = now;
          this.fenceCheck = this.deps.store
            .getTag(this.tag)
            .then((info) => {
              if (info && info.fenceEpoch > at && this.refusedAtFenceEpoch === at) this.lift();
            })
            .catch(() => {})
            .finally(() => {
              this.fenceCheck = undefined;
            });
        }
        const pending = this.fenceCheck;
        return pending ? pending.then(() => this.refusedAtFenceEpoch === undefined) : Promise.resolve(false);
      });
    },
  },
  'backup-lost-across-restart': {
    world: 'snowflake',
    what: "a clean shutdown gives every worker id back with the generator's highest tick (before issue 28): a backup id that issued behind the primary's tick (backup-worker, after a clock stepped forward and back) comes back ahead of the clock, and the restarted server finds no backup free",
    install() {
      return patch(LeasedWorker.prototype, 'close', async function (this: LeaseInside): Promise<void> {
        this.timer?.clear();
        this.generator.revoke();
        await this.renewing?.catch(() => {});
        if (this.lost) return;
        const last = this.generator.lastIssuedTick; // the bug: the primary's tick for every id, not lastIssuedTickOf(id)
        await Promise.all(this.grants.map((g) => this.provider.release(this.space, g, Math.max(last, g.afterTick)).catch(() => {})));
      });
    },
  },
  'lease-renewed-after-expiry': {
    world: 'snowflake',
    what: "a lease renewed after it expired: the store's renewal, finding the id granted to another holder meanwhile, takes the row back for the late renewer (its check keys on the worker id, not on owner and generation)",
    install() {
      return patch(
        MemoryWorkerLeaseStore.prototype,
        'renew',
        async function (this: LeaseStoreInside, lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
          const r = this.rows(lease.space).get(lease.workerId);
          if (!r) return undefined;
          r.owner = lease.owner;
          r.generation = lease.generation;
          r.expiresAtMs = this.now() + ttlMs;
          r.lastTick = Math.max(r.lastTick, lastTick);
          return { workerId: r.workerId, generation: r.generation, lastTick: r.lastTick, expiresAtMs: r.expiresAtMs };
        },
      );
    },
  },
  'reserve-handed-twice': {
    what: "the client's reserve hands out IDs without taking them out of the reserve (a reserve ID answered twice)",
    world: 'client',
    install() {
      return patch(RangeSet.prototype, 'takeMany', function (this: { size: number; take(): bigint | undefined }, n: number) {
        if (n > this.size) return undefined;
        const out: bigint[] = [];
        for (let i = 0; i < n; i++) out.push(this.take() as bigint);
        (this as unknown as RangeSet).addIds(out); // the bug: put back, so the next call hands them out again
        return out;
      });
    },
  },
  'migrate-no-retire': {
    what: "migrate reads the peer's row but does not rename it: the peer's servers keep taking ranges the copy hands out too",
    world: 'migrate',
    install() {
      const orig = PeerTable.prototype.retire;
      return patch(PeerTable.prototype, 'retire', function (this: PeerTable, tag: string, name: string, check: (l: TagInfo) => void) {
        const locked = orig.call(this, tag, name, check);
        const row = this.rows.get(name);
        if (row) {
          this.rows.delete(name);
          this.rows.set(tag, row);
          this.retiredAt.delete(tag);
        }
        return locked;
      });
    },
  },
};
