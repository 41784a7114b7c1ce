/**
 * Planted bugs: holes the protocols had (or could have), put back for one
 * run so the simulator proves it finds them. Production code knows nothing
 * of them: each plant patches a production class from here for the length of
 * a run (and undoes it), or flips a switch of the simulated store or state dir.
 */
import { checkShared, type GuardVerdict } from '../src/core/segment/rollback-guard.js';
import type { Clock } from '../src/core/clock.js';
import type { HighWaterMarkStore } from '../src/ports/high-water-mark-store.js';
import type { SegmentStore } from '../src/ports/segment-store.js';
import { TagGuard } from '../src/service/tag-guard.js';
import { StrictTagAllocator } from '../src/service/strict-tag-allocator.js';
import type { Cluster } from './model/cluster.js';
import { RangeSet } from '../src/client/reserve.js';
import type { TagInfo } from '../src/ports/segment-store.js';
import { PeerTable } from './model/migrate-world.js';
import type { World } from './worlds.js';

export interface Plant {
  readonly what: string;
  /** The world (sim/worlds.ts) the bug lives in, when not the cluster's: the plant tests run only that one. */
  readonly world?: World;
  /** Turns the bug on; answers how to turn it off. */
  install(cluster: Cluster): () => void;
}

/** The private parts of TagGuard a plant rewrites (runtime access only). */
interface GuardInside {
  tag: string;
  deps: { marks: HighWaterMarkStore; clock: Clock; store: SegmentStore };
  markedEnd: bigint | undefined;
  refusedAtFenceEpoch: number | undefined;
  fenceCheckedAt: number;
  fenceCheck: Promise<void> | undefined;
  isClosed: boolean;
  readFloor(): Promise<ReadonlyMap<string, unknown>>;
  refuse(reason: string, epoch: number): unknown;
  lift(): void;
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

export const PLANTS: Record<string, Plant> = {
  'giveback-no-generation': {
    what: "a clean shutdown gives its tail back into a deleted-and-re-created tag (the give-back's compare-and-set skips the generation)",
    install(c) {
      c.store.ignoreGenerationOnGiveBack = true;
      return () => {
        c.store.ignoreGenerationOnGiveBack = false;
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
    what: "a pipelined strict batch judged by the marks alone, before the previous batch's mark exists",
    install() {
      return patch(StrictTagAllocator.prototype, 'aboveAnswered', (floor: unknown) => floor);
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
      const orig = TagGuard.prototype.admit;
      return patch(
        TagGuard.prototype,
        'admit',
        async function (this: GuardInside, range: Parameters<TagGuard['admit']>[0], floor: Parameters<TagGuard['admit']>[1], note = '') {
          if (range.stride !== 1) return orig.call(this as unknown as TagGuard, range, floor, note);
          const key = this.tag;
          let verdict: GuardVerdict | undefined;
          await this.deps.marks.update(key, (current) => {
            const f = floor.has(key) ? floor.get(key) : current;
            const raised = current && f && current.mark < f.mark ? { ...current, mark: f.mark } : current;
            verdict = checkShared(f, raised, range.start, range.end, range.fenceEpoch, this.deps.marks.where);
            return verdict.record;
          });
          const v = verdict as GuardVerdict;
          if (v.ok) {
            this.markedEnd = range.end;
            return { ok: true };
          }
          return { ok: false, refusal: this.refuse(v.reason + note, v.record.trippedAtEpoch ?? range.fenceEpoch) };
        },
      );
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
