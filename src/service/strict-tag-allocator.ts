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
import { newInstance, type TagAllocator, type TagAllocatorDeps, type TagAllocatorSnapshot } from './tag-allocator.js';
import { TagRefusal } from './tag-refusal.js';

interface Waiter {
  /** The mark when the request was sent. */
  readonly floor: HighWaterMark | undefined;
  readonly start: bigint;
  readonly end: bigint;
  readonly fenceEpoch: number;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

export class StrictTagAllocator implements TagAllocator {
  readonly tag: string;
  private readonly instance = newInstance();
  private readonly deps: TagAllocatorDeps;
  private readonly refusal: TagRefusal;
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
    this.tag = tag;
    this.deps = deps;
    this.refusal = new TagRefusal(tag, deps);
  }

  /** Never from a buffer: every strict ID is its own store operation. */
  tryTake(): Id | undefined {
    return undefined;
  }

  tryTakeMany(): Id[] | undefined {
    return undefined;
  }

  /** Always a promise: each ID is one store operation. */
  next(): Promise<Id> {
    return this.take(1).then((ids) => ids[0] as Id);
  }

  /** `n` consecutive IDs from one atomic allocation of n. */
  nextMany(n: number): Promise<Id[]> {
    return this.take(n);
  }

  /** Nothing to prefetch. */
  load(): Promise<void> {
    return Promise.resolve();
  }

  resetRefusal(): void {
    this.refusal.lift();
  }

  close(): void {
    this.refusal.close();
  }

  /** Nothing is buffered, so nothing to give back. */
  giveBackTail(): Promise<boolean> {
    return Promise.resolve(false);
  }

  snapshot(): TagAllocatorSnapshot {
    return {
      tag: this.tag,
      current: undefined,
      next: undefined,
      remaining: 0,
      remainingCurrent: 0,
      nextReady: false,
      loading: this.inFlight > 0,
      step: 1,
      storedStep: undefined,
      lastLoadAt: this.lastOpAt,
      lastLoadMs: this.lastOpMs,
      loads: this.ops,
      loadFailures: this.failures,
      lastError: this.lastFailure && { code: this.lastFailure.code, message: this.lastFailure.message },
      refusing: this.refusal.current?.code,
      currentSize: 0,
      nextSize: 0,
      issued: this.issuedIds,
      instance: this.instance,
    };
  }

  private async take(n: number): Promise<Id[]> {
    for (let r = this.refusal.current; r; r = this.refusal.current) {
      // A fence made anywhere reopens the tag (the store's epoch is read at most once a second).
      if (!(await this.refusal.recheckFence())) throw r;
    }
    if (this.refusal.closed) throw new TagNotFoundError(this.tag);
    const { store, clock, logger } = this.deps;
    const t0 = performance.now();
    // Server-wide, read before sending (see the class comment).
    const floor = await this.refusal.mark();
    // A rollback recorded by another process or an earlier run: refuse without allocating, unless fenced since.
    if (floor?.trippedAtEpoch !== undefined && (await this.refusal.tripStands(floor.trippedAtEpoch))) {
      throw this.refusal.refuse(`a rollback was detected earlier (high-water mark ${floor.mark}); run \`sequoia fence\``, floor.trippedAtEpoch);
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
    if (this.refusal.closed) throw new TagNotFoundError(this.tag); // a gap, never handed out after close
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
        setImmediate(() => void this.flush()); // after this poll phase: every answer that arrived with it shares one fsync
      }
    });
  }

  private async flush(): Promise<void> {
    this.flushQueued = false;
    const batch = this.waiting;
    this.waiting = [];
    const { marks, logger } = this.deps;
    const ok: Waiter[] = [];
    const refused: Array<{ w: Waiter; reason: string; epoch: number }> = [];
    try {
      await marks.update(this.tag, (current) => {
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
      if (!this.refusal.current) {
        logger.error({ tag: this.tag, start: String(w.start), end: String(w.end) }, reason);
        this.refusal.refuse(reason, epoch);
      }
      w.reject(this.refusal.current);
    }
    for (const w of ok) w.resolve();
  }
}
