/**
 * A strictly increasing tag: IDs come from atomic store operations
 * (`allocate(tag, n)`), with no buffer and no prefetch, as Flickr's ticket
 * servers and Redis `INCR` do. The store serialises all servers, so IDs
 * follow the order of the store's commits cluster-wide: an ID answered before
 * another request was sent is smaller than that request's.
 *
 * COALESCING. Requests are not sent one by one: while one store write is in
 * flight, the requests that arrive collect in a queue, and when the write
 * answers, ONE write of `max_id = max_id + n` (n = the sum of their counts)
 * takes them all; each request gets its own consecutive slice, in arrival
 * order. A request that finds no write in flight waits for the end of the
 * current event-loop turn (`setImmediate`), so requests parsed in the same
 * turn share a write too. The order promise holds because every request of a
 * batch was sent before the batch's write was sent: whatever was answered
 * before that request was sent came from an earlier commit, hence is smaller;
 * and no request of a batch is answered before the write ends, so none is
 * answered before another of the same batch was sent. Each batch is one store
 * operation and one durable high-water-mark record; a failure fails every
 * request of the batch (each request is still all or nothing: a gap, never a
 * short answer). One write per tag and process is in flight at a time; the
 * next batch is sent as soon as the previous write answers and the mark
 * before it is recorded, so the store works on one batch while the state
 * directory records the previous one, and neither queues batches; batches
 * still answer in the order they were sent.
 *
 * The store's single-row write rate still caps the whole cluster, but in
 * batches rather than in requests (see BENCHMARKS.md, `strict`). Use strict
 * tags only where order matters (transaction versions, message sequences);
 * ordinary tags stay on the buffered path, which this class does not touch.
 *
 * The rollback guard still applies: a batch's answer must start at or above
 * the server-wide high-water mark as it was when the batch's write was SENT
 * (everything committed before that is below it in a monotonic store), and at
 * or above the end of every range the store answered this allocator before
 * then (the previous batch's mark may not be recorded yet). The mark then
 * rises to the batch's end, durably, before any of its IDs is returned.
 */
import { SequoiaError, UnavailableError } from '../core/errors.js';
import { type Id, toId } from '../core/id.js';
import type { Allocation } from '../ports/segment-store.js';
import { newInstance, snapshotOf, type TagAllocator, type TagAllocatorDeps, type TagAllocatorSnapshot } from './tag-allocator.js';
import { type Floor, TagGuard } from './tag-guard.js';

/** One caller's request: `n` consecutive IDs, all or nothing. */
interface Request {
  readonly n: number;
  readonly resolve: (ids: Id[]) => void;
  readonly reject: (e: unknown) => void;
}

export class StrictTagAllocator implements TagAllocator {
  readonly tag: string;
  private readonly instance = newInstance();
  private readonly deps: TagAllocatorDeps;
  private readonly guard: TagGuard;
  private ops = 0;
  private failures = 0;
  private issuedIds = 0;
  private lastOpMs: number | undefined;
  private lastOpAt: number | undefined;
  private lastFailure: SequoiaError | undefined;
  /** Requests waiting for the next store write. */
  private queue: Request[] = [];
  /** A batch's write is in flight (at most one per tag and process). */
  private writing = false;
  /** A batch is due at the end of this event-loop turn. */
  private scheduled = false;
  /** Settles when the last batch sent has answered its requests: batches answer in the order they were sent. */
  private turn: Promise<void> = Promise.resolve();
  /** Settles when the last batch sent has recorded its mark, or failed before: see `write`. */
  private marked: Promise<void> = Promise.resolve();
  /** The highest end of a range the store answered this allocator (see `write`: the floor of the next batch). */
  private answeredEnd: bigint | undefined;

  constructor(tag: string, deps: TagAllocatorDeps) {
    this.tag = tag;
    this.deps = deps;
    this.guard = new TagGuard(tag, deps);
  }

  /** Never from a buffer: every strict ID comes from a store operation made after the request. */
  tryTake(): Id | undefined {
    return undefined;
  }

  tryTakeMany(): Id[] | undefined {
    return undefined;
  }

  /** Always a promise: the ID comes from the next store write. */
  next(): Promise<Id> {
    return this.take(1).then((ids) => ids[0] as Id);
  }

  /** `n` consecutive IDs from one atomic allocation (shared with the requests waiting alongside). */
  nextMany(n: number): Promise<Id[]> {
    return this.take(n);
  }

  /** Nothing to prefetch. */
  load(): Promise<void> {
    return Promise.resolve();
  }

  resetRefusal(): void {
    this.guard.lift();
  }

  /** While refused after a rollback: re-reads the fence epoch (at most once a second); resolves true when lifted. */
  recheckRefusal(): Promise<boolean> {
    return this.guard.recheckFence();
  }

  close(reason?: SequoiaError): void {
    this.guard.close(reason);
  }

  /** Nothing is buffered, so nothing to give back. */
  giveBackTail(): Promise<boolean> {
    return Promise.resolve(false);
  }

  snapshot(): TagAllocatorSnapshot {
    const counts = snapshotOf({
      tag: this.tag,
      instance: this.instance,
      loading: this.writing,
      lastLoadAt: this.lastOpAt,
      lastLoadMs: this.lastOpMs,
      loads: this.ops,
      loadFailures: this.failures,
      lastError: this.lastFailure,
      refusing: this.guard.current,
      issued: this.issuedIds,
    });
    return { ...counts, step: 1 };
  }

  private async take(n: number): Promise<Id[]> {
    for (let r = this.guard.current; r; r = this.guard.current) {
      // A fence made anywhere reopens the tag (the store's epoch is read at most once a second).
      if (!(await this.guard.recheckFence())) throw r;
    }
    return new Promise<Id[]>((resolve, reject) => {
      this.queue.push({ n, resolve, reject });
      if (!this.writing && !this.scheduled) {
        this.scheduled = true;
        // After this poll phase: every request parsed with this one joins its write.
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  /** Sends the waiting requests as one batch unless a write is in flight (its end calls this again). */
  private pump(): void {
    if (this.writing || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.writing = true;
    const previous = this.turn;
    let done!: () => void;
    this.turn = new Promise<void>((resolve) => (done = resolve));
    void this.write(batch, previous).finally(done);
  }

  /**
   * One store write for the whole batch, one durable mark, then every request
   * its slice, once the batch sent before it has answered (`previous`). Never
   * rejects. `owner`: this is the tag's one write in flight, which sends the
   * next batch once the store has answered and the previous batch's mark is
   * recorded, so the next batch's store write and this batch's mark are made
   * at the same time. Waiting for that mark matters on a store that answers
   * faster than a mark is recorded (Redis): without it one small batch after
   * another would queue its own fsync in the state dir, and requests wait in
   * that queue instead of joining the next batch.
   */
  private async write(batch: Request[], previous: Promise<void>, owner = true): Promise<void> {
    let released = !owner;
    const release = () => {
      if (released) return;
      released = true;
      this.writing = false;
      this.pump(); // the next batch goes out now: the store works on it while this one's mark is recorded
    };
    const markedBefore = this.marked;
    let marked!: () => void;
    this.marked = new Promise<void>((resolve) => (marked = resolve));
    let total = 0;
    for (const r of batch) total += r.n;
    const { store, clock } = this.deps;
    const t0 = performance.now();
    let start: bigint;
    let end: bigint;
    let fenceEpoch: number;
    let floor: Floor;
    try {
      // Server-wide, read before sending (see the class comment); off the event loop. Throws a refusal
      // that arose while these requests waited (a rollback seen by the previous batch, a close), or one recorded earlier.
      floor = this.aboveAnswered(await this.guard.floor());
      let a: Allocation;
      try {
        a = await store.allocate(this.tag, total);
        if (this.answeredEnd === undefined || a.maxId > this.answeredEnd) this.answeredEnd = a.maxId;
      } finally {
        this.ops++;
        this.lastOpAt = clock.now();
        this.lastOpMs = performance.now() - t0;
      }
      await markedBefore;
      release();
      if ((a.stride ?? 1) !== 1) {
        throw new UnavailableError('STORE_UNAVAILABLE', 'strict tags need a single store, not a multi-store set');
      }
      end = a.maxId;
      start = end - BigInt(a.step);
      fenceEpoch = a.fenceEpoch;
      if (a.step !== total) throw new UnavailableError('STORE_UNAVAILABLE', `store answered ${a.step} IDs for ${total}`);
    } catch (e) {
      marked();
      release();
      await previous;
      if (batch.length > 1 && e instanceof SequoiaError && e.code === 'ID_SPACE_EXHAUSTED') {
        // The sum would pass 2^63-1; smaller requests alone may still fit. One write each, in arrival order.
        for (const r of batch) await this.write([r], previous, false);
        return;
      }
      this.fail(batch, e);
      return;
    }
    // The mark for the whole batch, durable before any of its IDs is returned.
    const refused = await this.guard.admit({ start, end, fenceEpoch, stride: 1, offset: 0 }, floor).then(
      (admission) => (admission.ok ? undefined : { e: admission.refusal as unknown }),
      (e: unknown) => ({ e }),
    );
    marked();
    await previous;
    if (refused) {
      this.fail(batch, refused.e);
      return;
    }
    if (this.guard.closed) {
      this.fail(batch, this.guard.current); // closed meanwhile: a gap, never handed out after close
      return;
    }
    let v0 = start;
    for (const r of batch) {
      const ids: Id[] = new Array<Id>(r.n);
      for (let k = 0; k < r.n; k++) ids[k] = toId(v0++);
      r.resolve(ids);
    }
    this.issuedIds += total;
  }

  /**
   * The floor raised to the end of every range the store answered this
   * allocator before the write about to be sent: those commits precede it,
   * so its answer lies above them. The server-wide marks may not show them
   * yet (the previous batch's mark is recorded while this write is in
   * flight), and a store restored in between must still be caught.
   */
  private aboveAnswered(floor: Floor): Floor {
    const end = this.answeredEnd;
    const read = floor.get(this.tag);
    if (end === undefined || (read !== undefined && read.mark >= end)) return floor;
    return new Map(floor).set(this.tag, { mark: end, trippedAtEpoch: read?.trippedAtEpoch });
  }

  /** Fails the batch; once closed, with the close's answer (a store closed under a write in flight is no store failure). */
  private fail(batch: Request[], e: unknown): void {
    this.failures++;
    const refused = this.guard.closed ? this.guard.current : undefined;
    const err =
      refused ??
      (e instanceof SequoiaError
        ? e
        : new UnavailableError('STORE_UNAVAILABLE', 'strict allocation failed', { cause: e, retryAfterMs: 1000 }));
    this.lastFailure = err;
    // The guard logged its refusals itself.
    if (err !== this.guard.current && err.code !== 'TAG_NOT_FOUND') {
      this.deps.logger.warn({ tag: this.tag, code: err.code, err: err.message, requests: batch.length }, 'strict allocation failed');
    }
    for (const r of batch) r.reject(err);
  }
}
