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
 * high-water mark as it was when its request was SENT (everything committed
 * before that is below it in a monotonic store). The mark then rises to the
 * highest end accepted. Marks of answers that arrive together are written with
 * one fsync before any of those IDs is returned.
 */
import { SequoiaError, TagNotFoundError, UnavailableError } from '../core/errors.js';
import { type Id, toId } from '../core/id.js';
import { checkAnswer, type HighWaterMark } from '../core/segment/rollback-guard.js';
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
  private strictRefusal: SequoiaError | undefined;
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
  /** In-memory copy of this tag's durable mark (read once, then kept in step with every write). */
  private high: HighWaterMark | undefined;
  private highLoaded = false;

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

  override resetRefusal(): void {
    this.strictRefusal = undefined;
    this.highLoaded = false; // a fence rewrote the mark
    super.resetRefusal();
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
      refusing: this.strictRefusal?.code ?? (this.strictClosed ? 'TAG_NOT_FOUND' : undefined),
      issued: this.issuedIds,
    };
  }

  private async take(n: number): Promise<Id[]> {
    if (this.strictRefusal) throw this.strictRefusal;
    if (this.strictClosed) throw new TagNotFoundError(this.tag);
    const { store, clock, logger } = this.strictDeps;
    const t0 = performance.now();
    const floor = this.mark();
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

  private mark(): HighWaterMark | undefined {
    if (!this.highLoaded) {
      this.high = this.strictDeps.marks.get(this.tag);
      this.highLoaded = true;
    }
    return this.high;
  }

  private flush(): void {
    this.flushQueued = false;
    const batch = this.waiting;
    this.waiting = [];
    const { marks, logger } = this.strictDeps;
    const before = this.mark();
    let record = before;
    const ok: Waiter[] = [];
    for (const w of batch) {
      if (this.strictRefusal) {
        w.reject(this.strictRefusal);
        continue;
      }
      // Judge against the mark at send time, but keep a trip recorded since.
      const prev = w.floor && { mark: w.floor.mark, trippedAtEpoch: record?.trippedAtEpoch ?? w.floor.trippedAtEpoch };
      const v = checkAnswer(prev, w.start, w.end, w.fenceEpoch, marks.where);
      const top = record && record.mark > w.end ? record.mark : w.end;
      if (v.ok) {
        record = { mark: top };
        ok.push(w);
      } else {
        record = { mark: record && record.mark > w.floor!.mark ? record.mark : w.floor!.mark, trippedAtEpoch: v.record.trippedAtEpoch };
        this.strictRefusal = new UnavailableError('STORE_ROLLBACK_DETECTED', `tag ${JSON.stringify(this.tag)}: ${v.reason}`);
        logger.error({ tag: this.tag, start: String(w.start), end: String(w.end) }, v.reason);
        w.reject(this.strictRefusal);
      }
    }
    try {
      if (record && (record.mark !== before?.mark || record.trippedAtEpoch !== before?.trippedAtEpoch)) {
        marks.put(this.tag, record);
        this.high = record;
      }
    } catch (e) {
      for (const w of ok) w.reject(new UnavailableError('STORE_UNAVAILABLE', 'cannot write the high-water mark', { cause: e }));
      return;
    }
    for (const w of ok) w.resolve();
  }
}
