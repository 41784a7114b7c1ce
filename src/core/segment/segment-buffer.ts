/**
 * Leaf's double buffer, without I/O. A segment is the half-open interval
 * [start, end) of IDs stepping by `stride` (1 for one store; N for the
 * multi-store set, where store i hands out IDs ≡ i mod N). The buffer holds the
 * current segment and at most one ready next segment.
 *
 * Hot path: `take()` is a compare and an add on doubles while the segment
 * lies below 2^53; above, a slower branch adds a small offset to a bigint
 * base. It never allocates below 2^53 and never loses precision above.
 *
 * When more than 10% of the current segment is used and no next segment is
 * ready, the buffer calls `onRefillNeeded` once; the owner loads the next
 * segment (the buffer does no I/O) and hands it back with `offer()`.
 */
import { type Id, MAX_SAFE, toId } from '../id.js';
import { prefetchAfter } from './prefetch.js';

export interface Segment {
  readonly start: bigint;
  /** Exclusive. */
  readonly end: bigint;
  readonly stride: number;
  /** The step this segment was allocated with (its length in store units). */
  readonly step: number;
  /** Clock time (ms) at which the segment arrived. */
  readonly loadedAt: number;
}

export class SegmentBuffer {
  // Hot fields. Below 2^53 (small mode) `cursor`/`limit` are the ID values
  // themselves. `fastLimit` is the lower of `limit` and the prefetch point, or
  // -1 where the fast path does not apply (big mode, stride > 1): one compare
  // and one add serve every other call. Above 2^53 (big mode) takeSlow()
  // works on offsets from the bigint `base`.
  private cursor = 0;
  private fastLimit = -1;
  private limit = -1;
  private stride = 1;
  private prefetchAt = Number.POSITIVE_INFINITY;
  private small = true;
  private base = 0n;
  private offset = 0;
  private length = 0;

  private currentSeg: Segment | undefined;
  private nextSeg: Segment | undefined;

  /** Called (synchronously, from take) at most once per current segment. */
  onRefillNeeded: () => void = () => {};

  get current(): Segment | undefined {
    return this.currentSeg;
  }

  get next(): Segment | undefined {
    return this.nextSeg;
  }

  /** Returns the next ID, or undefined when neither segment has one left. */
  take(): Id | undefined {
    const v = this.cursor;
    if (v < this.fastLimit) {
      this.cursor = v + 1;
      return v;
    }
    return this.takeSlow();
  }

  /**
   * Appends up to `n` IDs to `out` and returns how many it appended; fewer
   * than `n` only when both segments are used up.
   */
  takeInto(n: number, out: Id[]): number {
    let taken = 0;
    while (taken < n) {
      if (this.remainingCurrent() === 0 && !this.swap()) break;
      const k = Math.min(this.remainingCurrent(), n - taken);
      const s = this.stride;
      if (this.small) {
        let v = this.cursor;
        for (let i = 0; i < k; i++, v += s) out.push(v);
        this.cursor = v;
        if (v - s >= this.prefetchAt) this.fireRefill();
      } else {
        let o = this.offset;
        for (let i = 0; i < k; i++, o += s) out.push(toId(this.base + BigInt(o)));
        this.offset = o;
        if (o - s >= this.prefetchAt) this.fireRefill();
      }
      taken += k;
    }
    return taken;
  }

  /** IDs left in the current segment. */
  remainingCurrent(): number {
    const left = this.small ? this.limit - this.cursor : this.length - this.offset;
    return left > 0 ? Math.ceil(left / this.stride) : 0;
  }

  /** IDs left in both segments. */
  remaining(): number {
    return this.remainingCurrent() + (this.nextSeg ? segmentSize(this.nextSeg) : 0);
  }

  /** The next ID `take()` would return from the current segment, if any. */
  peekCurrent(): bigint | undefined {
    if (this.remainingCurrent() === 0) return undefined;
    return this.small ? BigInt(this.cursor) : this.base + BigInt(this.offset);
  }

  hasNext(): boolean {
    return this.nextSeg !== undefined;
  }

  /**
   * Accepts a loaded segment: it becomes current when the current one is used
   * up (or absent), otherwise next. Throws if a next segment is already held,
   * since that would silently drop IDs the owner believes are buffered.
   */
  offer(seg: Segment): void {
    if (seg.end <= seg.start || seg.stride < 1) throw new RangeError('empty segment');
    if (this.remainingCurrent() === 0 && this.nextSeg === undefined) {
      this.install(seg);
      return;
    }
    if (this.nextSeg !== undefined) throw new Error('next segment already loaded');
    this.nextSeg = seg;
    this.prefetchAt = Number.POSITIVE_INFINITY;
    this.updateFastLimit();
  }

  /** Lets the refill callback fire again at the next take (after a failed load). */
  rearm(): void {
    if (this.nextSeg === undefined && this.currentSeg !== undefined) {
      this.prefetchAt = Math.min(this.prefetchAt, this.small ? this.cursor : this.offset);
      this.updateFastLimit();
    }
  }

  /** Drops every buffered ID (after a rollback is detected, or a tag deleted). */
  clear(): void {
    this.currentSeg = undefined;
    this.nextSeg = undefined;
    this.small = true;
    this.cursor = 0;
    this.limit = -1;
    this.base = 0n;
    this.offset = 0;
    this.length = 0;
    this.prefetchAt = Number.POSITIVE_INFINITY;
    this.updateFastLimit();
  }

  private takeSlow(): Id | undefined {
    if (this.small) {
      const v = this.cursor;
      if (v < this.limit) {
        this.cursor = v + this.stride;
        if (v >= this.prefetchAt) this.fireRefill();
        return v;
      }
    } else {
      const o = this.offset;
      if (o < this.length) {
        this.offset = o + this.stride;
        if (o >= this.prefetchAt) this.fireRefill();
        return toId(this.base + BigInt(o));
      }
    }
    return this.swap() ? this.take() : undefined;
  }

  private swap(): boolean {
    const n = this.nextSeg;
    if (n === undefined) return false;
    this.nextSeg = undefined;
    this.install(n);
    return true;
  }

  private install(seg: Segment): void {
    this.currentSeg = seg;
    this.stride = seg.stride;
    const len = Number(seg.end - seg.start);
    // The value at this offset is the one whose taking crosses prefetchAfter(len).
    const threshold = prefetchAfter(len) - 1;
    if (seg.end - 1n <= MAX_SAFE) {
      this.small = true;
      this.cursor = Number(seg.start);
      this.limit = Number(seg.end);
      this.prefetchAt = this.cursor + threshold;
    } else {
      this.small = false;
      this.cursor = 0;
      this.limit = -1;
      this.base = seg.start;
      this.offset = 0;
      this.length = len;
      this.prefetchAt = threshold;
    }
    if (this.nextSeg !== undefined) this.prefetchAt = Number.POSITIVE_INFINITY;
    this.updateFastLimit();
  }

  private updateFastLimit(): void {
    this.fastLimit = this.small && this.stride === 1 ? Math.min(this.limit, this.prefetchAt) : -1;
  }

  private fireRefill(): void {
    this.prefetchAt = Number.POSITIVE_INFINITY;
    this.updateFastLimit();
    this.onRefillNeeded();
  }
}

export function segmentSize(seg: Segment): number {
  return Math.ceil(Number(seg.end - seg.start) / seg.stride);
}
