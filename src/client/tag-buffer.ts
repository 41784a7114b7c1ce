/**
 * The client's double buffer for one segment tag, Leaf-style: IDs come from
 * the current batch with no I/O; once more than 10% of it is used, the next
 * batch is fetched in the background (one fetch per tag at a time); when the
 * current batch runs out the next one takes its place.
 *
 * Invariant: every ID in a batch was handed to this client alone by the server
 * (the server never answers the same ID twice), and each ID leaves the buffer
 * at most once (`pos` only grows, a batch is dropped once passed). So callers
 * of one client, and of all clients, never share an ID.
 *
 * Batch size adapts to the observed rate: a batch should last about
 * `targetMs`; each new size is rate × targetMs, at most doubled or halved per
 * batch, within [minBatch, maxBatch].
 *
 * Hot path: `take()` is one compare and one add. `limit` is the index at which
 * the slow path must run (the prefetch point while no next batch is loading,
 * else the end of the batch), so the check for "prefetch now?" costs nothing.
 */
import { prefetchAfter } from '../core/segment/prefetch.js';
import { systemTimers, type Timer, type Timers } from '../core/timers.js';

export interface BatchPolicy {
  readonly minBatch: number;
  readonly maxBatch: number;
  readonly initialBatch: number;
  readonly targetMs: number;
}

const EMPTY: bigint[] = [];

export class TagBuffer {
  private cur: bigint[] = EMPTY;
  private pos = 0;
  private limit = 0;
  private next: bigint[] | undefined;
  /** The in-flight fetch, shared by every caller that waits for it. */
  loading: Promise<void> | undefined;
  /** A background prefetch scheduled for the next turn of the event loop. */
  private scheduled: Timer | undefined;
  /** No background prefetch before this time (after a failed one). */
  private quietUntil = 0;
  private curSince = 0;
  /** Current batch size. */
  batch: number;
  /** The rate observed over the last batch used up, in IDs per second (0 until one is). Sizes the reserve. */
  ratePerSecond = 0;
  /** Callers of next() waiting for IDs right now: a fetch asks for at least this many. */
  waiting = 0;

  constructor(
    readonly tag: string,
    private readonly policy: BatchPolicy,
    private readonly fetchBatch: (tag: string, count: number) => Promise<bigint[]>,
    private readonly now: () => number,
    private readonly timers: Timers = systemTimers,
  ) {
    this.batch = policy.initialBatch;
  }

  /** An ID from the buffers, or undefined when both are empty (a fetch is then under way). */
  take(): bigint | undefined {
    const i = this.pos;
    if (i < this.limit) {
      this.pos = i + 1;
      return this.cur[i];
    }
    return this.slowTake();
  }

  /** IDs left in the current and next batches. */
  get available(): number {
    return this.cur.length - this.pos + (this.next?.length ?? 0);
  }

  /** Takes up to n IDs from the buffers (fewer when they hold fewer). */
  takeMany(n: number): bigint[] {
    const out: bigint[] = [];
    while (out.length < n) {
      if (this.pos >= this.cur.length && !this.swap()) break;
      const k = Math.min(n - out.length, this.cur.length - this.pos);
      for (let j = 0; j < k; j++) out.push(this.cur[this.pos + j]!);
      this.pos += k;
      this.setLimit();
    }
    this.maybePrefetch();
    return out;
  }

  private slowTake(): bigint | undefined {
    if (this.pos >= this.cur.length && !this.swap()) {
      this.maybePrefetch();
      return undefined;
    }
    const id = this.cur[this.pos++];
    this.maybePrefetch();
    this.setLimit();
    return id;
  }

  /** Makes the next batch current. False when there is none. */
  private swap(): boolean {
    if (this.next === undefined) return false;
    const now = this.now();
    if (this.cur !== EMPTY) this.adapt(this.cur.length, now - this.curSince);
    this.cur = this.next;
    this.next = undefined;
    this.pos = 0;
    this.curSince = now;
    this.setLimit();
    return true;
  }

  private adapt(used: number, ms: number): void {
    const { minBatch, maxBatch, targetMs } = this.policy;
    if (ms > 0) this.ratePerSecond = (used / ms) * 1000;
    const want = ms <= 0 ? this.batch * 2 : (used / ms) * targetMs;
    const bounded = Math.min(this.batch * 2, Math.max(this.batch / 2, want));
    this.batch = Math.round(Math.min(maxBatch, Math.max(minBatch, bounded)));
  }

  private setLimit(): void {
    const len = this.cur.length;
    if (this.next !== undefined || this.loading !== undefined || this.scheduled !== undefined) {
      this.limit = len;
      return;
    }
    // Fast until the prefetch point; from then on take() visits slowTake,
    // which starts the prefetch (or, after a failed one, waits out the quiet time).
    this.limit = Math.max(this.pos, Math.min(len, prefetchAfter(len)));
  }

  /** Starts a background fetch when one is due: next empty, none running, past the prefetch point (or nothing left). */
  private maybePrefetch(): void {
    if (this.next !== undefined || this.loading !== undefined || this.scheduled !== undefined) return;
    const len = this.cur.length;
    if (this.pos < prefetchAfter(len) && this.pos < len) return;
    if (this.now() < this.quietUntil && this.waiting === 0) return;
    // Started on the next turn of the event loop: the call that crosses the 10%
    // mark stays O(1) (setting up requests and parsing happen outside it).
    this.scheduled = this.timers.after(0, () => {
      this.scheduled = undefined;
      this.load().catch(() => undefined);
    });
  }

  /**
   * Fetches one batch (or joins the fetch under way). Rejects with the fetch's
   * error; a failed background prefetch is retried no sooner than 1 s later
   * unless a caller is waiting.
   */
  load(): Promise<void> {
    if (this.scheduled !== undefined) {
      this.scheduled.clear();
      this.scheduled = undefined;
    }
    if (this.loading) return this.loading;
    if (this.next !== undefined) return Promise.resolve();
    const count = Math.min(this.policy.maxBatch, Math.max(this.batch, this.waiting));
    const p = this.fetchBatch(this.tag, count).then(
      (ids) => {
        this.loading = undefined;
        this.next = ids;
        if (this.pos >= this.cur.length) this.swap();
        this.setLimit();
      },
      (e: unknown) => {
        this.loading = undefined;
        this.quietUntil = this.now() + 1000;
        this.setLimit();
        throw e;
      },
    );
    this.loading = p;
    this.setLimit();
    return p;
  }

  /** Forgets both batches (after close). */
  clear(): void {
    this.scheduled?.clear();
    this.scheduled = undefined;
    this.cur = EMPTY;
    this.next = undefined;
    this.pos = 0;
    this.limit = 0;
  }
}
