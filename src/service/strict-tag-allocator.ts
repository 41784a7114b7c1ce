/**
 * A strictly increasing tag: every request is ONE atomic store operation
 * (`allocate(tag, n)`: n = 1 for one ID), with no buffer and no prefetch, as
 * Flickr's ticket servers and Redis `INCR` do. The store serialises all
 * servers, so IDs follow the order of the store's commits cluster-wide: an ID
 * answered before another request was sent is smaller than that request's.
 *
 * The price: one store round trip per request (no double buffer hides it),
 * and the store's single-row write rate caps the whole cluster (see
 * BENCHMARKS.md, `strict`). Use it only where order matters (transaction
 * versions, message sequences); ordinary tags stay on the buffered path,
 * which this class does not touch.
 *
 * The rollback guard still applies, adapted to concurrent requests whose
 * answers may arrive in any order: an answer must start at or above the
 * server-wide high-water mark as it was when its request was SENT (everything
 * committed before that is below it in a monotonic store). The mark then
 * rises to the highest end accepted. Marks of answers that arrive together are
 * written with one fsync before any of those IDs is returned.
 */
import { SequoiaError, TagNotFoundError, UnavailableError } from '../core/errors.js';
import { type Id, toId } from '../core/id.js';
import { checkShared, type HighWaterMark } from '../core/segment/rollback-guard.js';
import { TagAllocator, type TagAllocatorDeps, type TagAllocatorSnapshot } from './tag-allocator.js';

interface Waiter {
  /** The mark when the request was sent. */
  readonly floor: HighWaterMark | undefined;
  readonly start: bigint;
  readonly end: bigint;
  readonly fenceEpoch: number;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

export class StrictTagAllocator extends TagAllocator {
  private readonly strictDeps: TagAllocatorDeps;
  private strictClosed = false;
  private inFlight = 0;
  private ops = 0;
  private failures = 0;
  private issuedIds = 0;
  private lastOpMs: number | undefined;
  private lastOpAt: number | undefined;
  private lastFailure: SequoiaError | undefined;
  private waiting: Waiter[] = [];
  private flushQueued = false;

  constructor(tag: string, deps: TagAllocatorDeps) {
    super(tag, deps);
    this.strictDeps = deps;
  }

  /** Always a promise: each ID is one store operation. */
  /** Never from a buffer: every strict ID is its own store operation. */
  override tryTake(): Id | undefined {
    return undefined;
  }

  override tryTakeMany(): Id[] | undefined {
    return undefined;
  }

  override next(): Promise<Id> {
    return this.take(1).then((ids) => ids[0] as Id);
  }

  /** `n` consecutive IDs from one atomic allocation of n. */
  override nextMany(n: number): Promise<Id[]> {
    return this.take(n);
  }

  /** Nothing to prefetch. */
  override load(): Promise<void> {
    return Promise.resolve();
  }

  override close(): void {
    this.strictClosed = true;
    super.close();
  }

  /** Nothing is buffered, so nothing to give back. */
  override giveBackTail(): Promise<boolean> {
    return Promise.resolve(false);
  }

  override snapshot(): TagAllocatorSnapshot {
    return {
      ...super.snapshot(),
      remaining: 0,
      remainingCurrent: 0,
      nextReady: false,
      loading: this.inFlight > 0,
      step: 1,
      lastLoadAt: this.lastOpAt,
      lastLoadMs: this.lastOpMs,
      loads: this.ops,
      loadFailures: this.failures,
      lastError: this.lastFailure && { code: this.lastFailure.code, message: this.lastFailure.message },
      issued: this.issuedIds,
    };
  }

  private async take(n: number): Promise<Id[]> {
    for (let r = this.refused(); r; r = this.refused()) {
      // A fence made anywhere reopens the tag (the store's epoch is read at most once a second).
      if (!(await this.recheckFence())) throw r;
    }
    if (this.strictClosed) throw new TagNotFoundError(this.tag);
    const { store, clock, logger, marks } = this.strictDeps;
    const t0 = performance.now();
    // Server-wide, read before sending (see the class comment).
    const floor = marks.get(this.tag);
    if (floor?.trippedAtEpoch !== undefined) {
      // A rollback recorded by another process or an earlier run: refuse without allocating, unless fenced since.
      const info = await store.getTag(this.tag);
      if (info && info.fenceEpoch <= floor.trippedAtEpoch) {
        throw this.refuse(`a rollback was detected earlier (high-water mark ${floor.mark}); run \`sequoia fence\``, floor.trippedAtEpoch);
      }
    }
    this.inFlight++;
    let start: bigint;
    let end: bigint;
    try {
      const a = await store.allocate(this.tag, n);
      if ((a.stride ?? 1) !== 1) {
        throw new UnavailableError('STORE_UNAVAILABLE', 'strict tags need a single store, not a multi-store set');
      }
      end = a.maxId;
      start = end - BigInt(a.step);
      if (a.step !== n) throw new UnavailableError('STORE_UNAVAILABLE', `store answered ${a.step} IDs for ${n}`);
      await this.guard(floor, start, end, a.fenceEpoch);
    } catch (e) {
      this.failures++;
      const err = e instanceof SequoiaError ? e : new UnavailableError('STORE_UNAVAILABLE', 'strict allocation failed', { cause: e, retryAfterMs: 1000 });
      this.lastFailure = err;
      if (err.code !== 'STORE_ROLLBACK_DETECTED') logger.warn({ tag: this.tag, code: err.code, err: err.message }, 'strict allocation failed');
      throw err;
    } finally {
      this.inFlight--;
      this.ops++;
      this.lastOpAt = clock.now();
      this.lastOpMs = performance.now() - t0;
    }
    if (this.strictClosed) throw new TagNotFoundError(this.tag); // a gap, never handed out after close
    const out: Id[] = [];
    for (let v = start; v < end; v++) out.push(toId(v));
    this.issuedIds += n;
    return out;
  }

  /** Checks the answer against the high-water mark and makes the mark durable (batched) before it is used. */
  private guard(floor: HighWaterMark | undefined, start: bigint, end: bigint, fenceEpoch: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ floor, start, end, fenceEpoch, resolve, reject });
      if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => this.flush()); // after this poll phase: every answer that arrived with it shares one fsync
      }
    });
  }

  private flush(): void {
    this.flushQueued = false;
    const batch = this.waiting;
    this.waiting = [];
    const { marks, logger } = this.strictDeps;
    const ok: Waiter[] = [];
    const refused: Array<{ w: Waiter; reason: string; epoch: number }> = [];
    try {
      marks.update(this.tag, (current) => {
        let record = current;
        for (const w of batch) {
          const v = checkShared(w.floor, record, w.start, w.end, w.fenceEpoch, marks.where);
          record = v.record;
          if (v.ok) ok.push(w);
          else refused.push({ w, reason: v.reason, epoch: v.record.trippedAtEpoch ?? w.fenceEpoch });
        }
        return record;
      });
    } catch (e) {
      const err = e instanceof SequoiaError ? e : new UnavailableError('STORE_UNAVAILABLE', 'cannot record the high-water mark', { cause: e });
      for (const w of batch) w.reject(err);
      return;
    }
    for (const { w, reason, epoch } of refused) {
      if (!this.refused()) {
        logger.error({ tag: this.tag, start: String(w.start), end: String(w.end) }, reason);
        this.refuse(reason, epoch);
      }
      w.reject(this.refused());
    }
    for (const w of ok) w.resolve();
  }
}
