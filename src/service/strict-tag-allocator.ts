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
 * current event-loop turn (`timers.after(0)`: setImmediate), so requests parsed in the same
 * turn share a write too. The order promise holds because every request of a
 * batch was sent before the batch's write was sent: whatever was answered
 * before that request was sent came from an earlier commit, hence is smaller;
 * and no request of a batch is answered before the write ends, so none is
 * answered before another of the same batch was sent. Each batch is one
 * store operation and at most one durable high-water-mark record; a failure
 * fails every request of the batch (each request is still all or nothing: a
 * gap, never a short answer). One store write per tag and process is in flight at a
 * time, and one mark record: the next batch is sent as soon as the previous
 * write answers, and the batches the store answered while a mark was being
 * recorded wait together for ONE record (of the highest end), so a store
 * that answers faster than the disk records a mark (Redis) neither queues one
 * fsync per batch nor holds its next write back; batches still answer in the
 * order they were sent.
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
 * rises to the batch's end, durably, before any of its IDs is returned;
 * batches recorded together are each checked against their own floor
 * (`TagGuard.admitAll`), and one record covers them all.
 */
import { monotonicMs } from '../core/clock.js';
import { SequoiaError, UnavailableError } from '../core/errors.js';
import { systemTimers, type Timers } from '../core/timers.js';
import { type Id, toId } from '../core/id.js';
import type { Allocation } from '../ports/segment-store.js';
import { newInstance, snapshotOf, type TagAllocator, type TagAllocatorDeps, type TagAllocatorSnapshot } from './tag-allocator.js';
import { type Admission, type AnsweredRange, type Floor, TagGuard } from './tag-guard.js';

/** One caller's request: `n` consecutive IDs, all or nothing. */
interface Request {
  readonly n: number;
  readonly resolve: (ids: Id[]) => void;
  readonly reject: (e: unknown) => void;
}

/** A batch after its store write: the range answered and the floor it is judged by, or why it failed. */
interface Answered {
  readonly batch: Request[];
  readonly total: number;
  readonly range?: AnsweredRange;
  readonly floor?: Floor;
  readonly failure?: unknown;
}

export class StrictTagAllocator implements TagAllocator {
  readonly tag: string;
  private readonly instance = newInstance();
  private readonly deps: TagAllocatorDeps;
  private readonly timers: Timers;
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
  /** Batches the store answered (or failed), in the order they were sent, waiting for the next mark record. */
  private answered: Answered[] = [];
  /** A mark record is under way (at most one per tag and process). */
  private marking = false;
  /** The highest end of a range the store answered this allocator (see `send`: the floor of the next batch). */
  private answeredEnd: bigint | undefined;

  constructor(tag: string, deps: TagAllocatorDeps) {
    this.tag = tag;
    this.deps = deps;
    this.timers = deps.timers ?? systemTimers;
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
        this.timers.after(0, () => {
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
    void this.send(batch);
  }

  /**
   * One store write for the whole batch. Its answer (or its failure) joins
   * the batches waiting for their mark, in the order they were sent, and the
   * next batch goes out at once. Never rejects. `alone`: one request of a
   * batch split near 2^63-1, whose caller sends the next batch.
   */
  private async send(batch: Request[], alone = false): Promise<void> {
    let total = 0;
    for (const r of batch) total += r.n;
    const { store, clock } = this.deps;
    const t0 = monotonicMs(clock);
    try {
      // Server-wide, read before sending (see the class comment); off the event loop. Throws a refusal
      // that arose while these requests waited (a rollback seen by an earlier batch, a close), or one recorded earlier.
      const floor = this.aboveAnswered(await this.guard.floor());
      let a: Allocation;
      try {
        a = await store.allocate(this.tag, total);
        if (this.answeredEnd === undefined || a.maxId > this.answeredEnd) this.answeredEnd = a.maxId;
      } finally {
        this.ops++;
        this.lastOpAt = clock.now();
        this.lastOpMs = monotonicMs(clock) - t0;
      }
      if ((a.stride ?? 1) !== 1) {
        throw new UnavailableError('STORE_UNAVAILABLE', 'strict tags need a single store, not a multi-store set');
      }
      if (a.step !== total) throw new UnavailableError('STORE_UNAVAILABLE', `store answered ${a.step} IDs for ${total}`);
      const range = {
        start: a.maxId - BigInt(a.step),
        end: a.maxId,
        fenceEpoch: a.fenceEpoch,
        generation: a.generation,
        stride: 1,
        offset: 0,
      };
      this.answered.push({ batch, total, range, floor });
    } catch (e) {
      if (batch.length > 1 && e instanceof SequoiaError && e.code === 'ID_SPACE_EXHAUSTED') {
        // The sum would pass 2^63-1; smaller requests alone may still fit. One write each, in arrival order.
        for (const r of batch) await this.send([r], true);
        this.writing = false;
        this.pump();
        return;
      }
      this.answered.push({ batch, total, failure: e });
    }
    this.recordMarks();
    if (alone) return;
    // Now, not a few promise turns later: those turns wait behind the answers the event loop is writing.
    this.writing = false;
    this.pump();
  }

  /** Records one mark for every batch answered since the last record began, unless a record is under way (its end calls this again). */
  private recordMarks(): void {
    if (this.marking || this.answered.length === 0) return;
    const group = this.answered;
    this.answered = [];
    this.marking = true;
    void this.settle(group);
  }

  /**
   * The mark for every answered batch of the group, durable before any of
   * their IDs is returned, then each request its slice, batch after batch in
   * the order they were sent. Never rejects (the next record would never start).
   */
  private async settle(group: Answered[]): Promise<void> {
    const ok = group.filter((b): b is Answered & { range: AnsweredRange; floor: Floor } => b.range !== undefined);
    const admitted = new Map<Answered, unknown>(); // the batch's refusal or failure; absent when admitted
    const verdict = (p: Promise<Admission | undefined>) =>
      p.then(
        (a) => (a === undefined ? undefined : a.ok ? { e: undefined } : { e: a.refusal as unknown }),
        (e: unknown) => ({ e }),
      );
    const all = await verdict(this.guard.admitAll(ok));
    if (all) {
      if (all.e !== undefined) for (const b of ok) admitted.set(b, all.e);
    } else {
      // A later batch fails its own check: one record each, so the refusal falls where it arose.
      for (const b of ok) {
        const one = await verdict(this.guard.admit(b.range, b.floor));
        if (one?.e !== undefined) admitted.set(b, one.e);
      }
    }
    // The next record starts before this group is answered: writing the answers keeps the event loop busy
    // a while, and the disk can work meanwhile. Its answers still come after these: they wait for its record.
    this.marking = false;
    this.recordMarks();
    for (const b of group) {
      if (b.range === undefined) {
        this.fail(b.batch, b.failure);
      } else if (admitted.has(b)) {
        this.fail(b.batch, admitted.get(b));
      } else if (this.guard.closed) {
        this.fail(b.batch, this.guard.current); // closed meanwhile: a gap, never handed out after close
      } else {
        let v0 = b.range.start;
        for (const r of b.batch) {
          const ids: Id[] = new Array<Id>(r.n);
          for (let k = 0; k < r.n; k++) ids[k] = toId(v0++);
          r.resolve(ids);
        }
        this.issuedIds += b.total;
      }
    }
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
    return new Map(floor).set(this.tag, { ...read, mark: end });
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
