/**
 * The rollback side of one tag's allocator, held by both modes: the refusal
 * in force (a rollback until a fence, or the tag closed), its lifting when an
 * operator fences the store from anywhere, and the server-wide marks an
 * answer is judged by.
 */
import { type SequoiaError, TagNotFoundError, UnavailableError } from '../core/errors.js';
import { monotonicMs } from '../core/clock.js';
import type { HighWaterMark } from '../core/segment/rollback-guard.js';
import type { TagAllocatorDeps } from './tag-allocator.js';

const FENCE_RECHECK_MS = 1000;

type RefusalDeps = Pick<TagAllocatorDeps, 'store' | 'marks' | 'clock' | 'logger'>;

export class TagRefusal {
  private readonly tag: string;
  private readonly deps: RefusalDeps;
  private readonly onLift: () => void;
  /** A failure that no retry can fix without an operator (rollback) or a new tag (deleted). */
  private refusal: SequoiaError | undefined;
  /** While refused after a rollback: the trip's fence epoch, and when (monotonic ms) the store's epoch was last read. */
  private refusedAtEpoch: number | undefined;
  private fenceCheckedAt = Number.NEGATIVE_INFINITY;
  private fenceCheck: Promise<void> | undefined;
  private isClosed = false;

  /** `onLift` runs whenever the refusal is lifted (an operator's fence), for the holder's own retry state. */
  constructor(tag: string, deps: RefusalDeps, onLift: () => void = () => {}) {
    this.tag = tag;
    this.deps = deps;
    this.onLift = onLift;
  }

  /** The refusal in force (rollback, or the tag closed), if any. */
  get current(): SequoiaError | undefined {
    return this.refusal;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Refuses the tag after a rollback, until a fence newer than `epoch`. */
  refuse(reason: string, epoch: number): UnavailableError {
    const e = new UnavailableError('STORE_ROLLBACK_DETECTED', `tag ${JSON.stringify(this.tag)}: ${reason}`);
    this.refusal = e;
    this.refusedAtEpoch = epoch;
    return e;
  }

  /** After an operator's fence: forget the refusal (a closed tag stays refused). */
  lift(): void {
    if (this.isClosed) return;
    this.refusal = undefined;
    this.refusedAtEpoch = undefined;
    this.onLift();
  }

  /** The tag stops being served: refused for good, keeping a rollback refusal already in force. */
  close(): void {
    this.isClosed = true;
    this.refusal ??= new TagNotFoundError(this.tag);
  }

  /**
   * While refused after a rollback, reads the tag's fence epoch from the store
   * (at most once a second, timed on the monotonic clock: a wall clock stepped
   * back must not hold the refusal until it catches up): a newer epoch than the trip's means an operator
   * fenced the store, so the refusal is lifted. Resolves true when it was.
   */
  recheckFence(): Promise<boolean> {
    const at = this.refusedAtEpoch;
    if (at === undefined || this.isClosed) return Promise.resolve(false);
    const now = monotonicMs(this.deps.clock);
    if (!this.fenceCheck && now - this.fenceCheckedAt >= FENCE_RECHECK_MS) {
      this.fenceCheckedAt = now;
      this.fenceCheck = this.deps.store
        .getTag(this.tag)
        .then((info) => {
          if (info && info.fenceEpoch > at && this.refusedAtEpoch === at) {
            this.deps.logger.warn({ tag: this.tag, fenceEpoch: info.fenceEpoch }, 'the store was fenced: serving the tag again');
            this.lift();
          }
        })
        .catch(() => {})
        .finally(() => {
          this.fenceCheck = undefined;
        });
    }
    const pending = this.fenceCheck;
    return pending ? pending.then(() => this.refusedAtEpoch === undefined) : Promise.resolve(false);
  }

  /**
   * Whether a rollback recorded in a mark (by another process or an earlier
   * run) at fence epoch `trippedAtEpoch` still stands: the store was not fenced since.
   */
  async tripStands(trippedAtEpoch: number): Promise<boolean> {
    const info = await this.deps.store.getTag(this.tag);
    return info ? info.fenceEpoch <= trippedAtEpoch : false;
  }

  /** The tag's server-wide mark (all processes). */
  mark(): Promise<HighWaterMark | undefined> {
    return this.deps.marks.get(this.tag);
  }

  /**
   * The server-wide marks (all processes) an answer to a request sent now
   * will be judged by: the tag's, or one per residue class of a multi-store set.
   */
  async floor(): Promise<ReadonlyMap<string, HighWaterMark | undefined>> {
    const { marks, store } = this.deps;
    const n = store.stride ?? 1;
    const keys = n === 1 ? [this.tag] : Array.from({ length: n }, (_, i) => classKey(this.tag, n, i));
    const values = await Promise.all(keys.map((k) => marks.get(k)));
    return new Map(keys.map((k, i) => [k, values[i]]));
  }
}

/** The mark key of one residue class of a multi-store set ('#' is not legal in tags, so no tag has this key). */
export function classKey(tag: string, stride: number, offset: number): string {
  return `${tag}#${stride}:${offset}`;
}
