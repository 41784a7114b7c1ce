/**
 * One tag's allocator: a SegmentBuffer plus the I/O around it: background
 * loads (one at a time), the step policy, the rollback guard, bounded waiting
 * when both segments are used up, and backoff after a failed load.
 *
 * `next()` returns the ID itself while the buffer has one (no promise, no
 * allocation) and a promise only when it has to wait for the store; `await`
 * works on both.
 */
import { SequoiaError, TagNotFoundError, UnavailableError } from '../core/errors.js';
import type { Id } from '../core/id.js';
import { checkShared, earlierTrip, type HighWaterMark } from '../core/segment/rollback-guard.js';
import { type Segment, SegmentBuffer, segmentSize } from '../core/segment/segment-buffer.js';
import { nextStep } from '../core/segment/step-policy.js';
import type { Clock } from '../ports/clock.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import type { Logger } from '../ports/logger.js';
import type { SegmentStore } from '../ports/segment-store.js';

export interface TagAllocatorOptions {
  /** Cap for the dynamic step. Default 1,000,000. */
  readonly maxStep: number;
  /** How long a caller waits for an in-flight load when both segments are empty. Default 3000 ms. */
  readonly loadTimeoutMs: number;
  /** First retry delay after a failed load; doubles up to `maxRetryDelayMs`. Default 100 ms. */
  readonly minRetryDelayMs: number;
  /** Default 5000 ms. */
  readonly maxRetryDelayMs: number;
}

export const DEFAULT_ALLOCATOR_OPTIONS: TagAllocatorOptions = {
  maxStep: 1_000_000,
  loadTimeoutMs: 3000,
  minRetryDelayMs: 100,
  maxRetryDelayMs: 5000,
};

export interface TagAllocatorDeps {
  readonly store: SegmentStore;
  readonly marks: HighWaterMarkStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly options: TagAllocatorOptions;
  /** Called after every load attempt (for metrics). */
  readonly onLoad?: (tag: string, ok: boolean, seconds: number) => void;
}

/** A point-in-time view for /v1/status and the monitoring page. */
export interface TagAllocatorSnapshot {
  readonly tag: string;
  readonly current: { readonly start: bigint; readonly end: bigint; readonly next: bigint | undefined } | undefined;
  readonly next: { readonly start: bigint; readonly end: bigint } | undefined;
  readonly remaining: number;
  readonly remainingCurrent: number;
  readonly nextReady: boolean;
  readonly loading: boolean;
  readonly step: number | undefined;
  readonly storedStep: number | undefined;
  readonly lastLoadAt: number | undefined;
  readonly lastLoadMs: number | undefined;
  readonly loads: number;
  readonly loadFailures: number;
  readonly lastError: { readonly code: string; readonly message: string } | undefined;
  readonly refusing: string | undefined;
  /** IDs the current / next segment holds in all (for "how full" bars). */
  readonly currentSize: number;
  readonly nextSize: number;
  /**
   * IDs taken out of this allocator's buffer since it was created: IDs loaded
   * minus IDs still buffered minus IDs dropped (rollback, close). Monotonic for
   * the allocator's life; metrics and rates derive from it at read time, so
   * the hot path counts nothing.
   */
  readonly issued: number;
  /** Distinguishes allocators of the same tag (a tag deleted and created again), so totals can carry over. */
  readonly instance: number;
}

let instances = 0;

export class TagAllocator {
  readonly tag: string;
  private readonly instance = ++instances;
  private readonly buffer = new SegmentBuffer();
  private readonly deps: TagAllocatorDeps;
  private inflight: Promise<void> | undefined;
  /** A failure that no retry can fix without an operator (rollback) or a new tag (deleted). */
  private refusal: SequoiaError | undefined;
  private lastError: SequoiaError | undefined;
  private consecutiveFailures = 0;
  private nextLoadAllowedAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private lastStep: number | undefined;
  private lastLoadAt: number | undefined;
  private lastLoadMs: number | undefined;
  private storedStep: number | undefined;
  private loads = 0;
  private loadFailures = 0;
  /** IDs accepted into the buffer, and IDs dropped from it unused: see `issued`. */
  private loadedIds = 0;
  private droppedIds = 0;
  private closed = false;
  /** The unused tail computed at close(), and a range that arrived after it, for giveBackTail(). */
  private tail: { readonly from: bigint; readonly end: bigint } | undefined;
  private late: { readonly start: bigint; readonly end: bigint } | undefined;
  private lastFenceEpoch: number | undefined;
  private mayGiveBack = false;
  /** The end of the last range whose mark this allocator recorded (a range arriving after close is not recorded). */
  private markedEnd: bigint | undefined;
  /** While refused after a rollback: the trip's fence epoch, and when the store's epoch was last read. */
  private refusedAtEpoch: number | undefined;
  private fenceCheckedAt = Number.NEGATIVE_INFINITY;
  private fenceCheck: Promise<void> | undefined;
  /** The last mark could not be recorded: the next load proves the state directory writable before it allocates. */
  private markFailure: SequoiaError | undefined;

  constructor(tag: string, deps: TagAllocatorDeps) {
    this.tag = tag;
    this.deps = deps;
    this.buffer.onRefillNeeded = () => {
      void this.load();
    };
  }

  /** The next ID: the value itself from the buffer, or a promise when the store must be asked. */
  next(): Id | Promise<Id> {
    const v = this.buffer.take();
    return v !== undefined ? v : this.nextSlow();
  }

  /** An ID only if the buffer has one now; never a promise, never an error (nothing is lost when it has none). */
  tryTake(): Id | undefined {
    return this.buffer.take();
  }

  /** `n` IDs only if the buffers hold them all now; otherwise undefined and nothing is taken. */
  tryTakeMany(n: number): Id[] | undefined {
    if (this.buffer.remaining() < n) return undefined;
    const out: Id[] = [];
    this.buffer.takeInto(n, out);
    return out;
  }

  /** `n` IDs or an error: never fewer. IDs taken before a failure are dropped (a gap, never a repeat). */
  nextMany(n: number): Id[] | Promise<Id[]> {
    const out: Id[] = [];
    if (this.buffer.takeInto(n, out) === n) return out;
    return this.fill(n, out);
  }

  /** Starts a load unless one is in flight; resolves when it ends (it never rejects). */
  load(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (this.refusal || this.closed) return Promise.resolve();
    const p = this.doLoad().finally(() => {
      this.inflight = undefined;
    });
    this.inflight = p;
    return p;
  }

  /** After an operator's fence: forget the refusal so the next load is tried. */
  resetRefusal(): void {
    if (this.closed) return;
    this.refusal = undefined;
    this.refusedAtEpoch = undefined;
    this.lastError = undefined;
    this.nextLoadAllowedAt = 0;
  }

  /**
   * While refused after a rollback, reads the tag's fence epoch from the store
   * (at most once a second): a newer epoch than the trip's means an operator
   * fenced the store, so the refusal is lifted. Resolves true when it was.
   */
  protected recheckFence(): Promise<boolean> {
    const at = this.refusedAtEpoch;
    if (at === undefined || this.closed) return Promise.resolve(false);
    const now = this.deps.clock.now();
    if (!this.fenceCheck && now - this.fenceCheckedAt >= FENCE_RECHECK_MS) {
      this.fenceCheckedAt = now;
      this.fenceCheck = this.deps.store
        .getTag(this.tag)
        .then((info) => {
          if (info && info.fenceEpoch > at && this.refusedAtEpoch === at) {
            this.deps.logger.warn({ tag: this.tag, fenceEpoch: info.fenceEpoch }, 'the store was fenced: serving the tag again');
            this.resetRefusal();
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

  /** The refusal in force (rollback, or the tag closed), if any. */
  protected refused(): SequoiaError | undefined {
    return this.refusal;
  }

  /** Refuses the tag after a rollback, until a fence newer than `epoch`. */
  protected refuse(reason: string, epoch: number): UnavailableError {
    const e = new UnavailableError('STORE_ROLLBACK_DETECTED', `tag ${JSON.stringify(this.tag)}: ${reason}`);
    this.refusal = e;
    this.refusedAtEpoch = epoch;
    this.lastError = e;
    this.droppedIds += this.buffer.remaining();
    this.buffer.clear();
    return e;
  }

  /** The server-wide marks (all processes) an answer to a request sent now will be judged by. */
  protected readFloor(): ReadonlyMap<string, HighWaterMark | undefined> {
    const { marks, store } = this.deps;
    const floor = new Map<string, HighWaterMark | undefined>();
    const n = store.stride ?? 1;
    if (n === 1) floor.set(this.tag, marks.get(this.tag));
    else for (let i = 0; i < n; i++) floor.set(classKey(this.tag, n, i), marks.get(classKey(this.tag, n, i)));
    return floor;
  }

  /** Stops background work and drops the buffer (the unused IDs become a gap). */
  close(): void {
    if (!this.closed) {
      this.mayGiveBack = this.refusal === undefined;
      this.tail = unusedTail(this.buffer);
    }
    this.closed = true;
    this.refusal ??= new TagNotFoundError(this.tag);
    this.droppedIds += this.buffer.remaining();
    this.buffer.clear();
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  /**
   * After close(), on a clean shutdown: gives the unused tail of the last
   * range back to the store (compare-and-set: only while no one allocated
   * after us), so a restart continues at the next unused ID instead of
   * wasting up to two ranges. Nothing a caller could have received is given
   * back: close() stopped serving before the tail was computed. The
   * high-water mark is lowered first, durably: a weaker guard for a moment is
   * safe, whereas a mark left above the store's max_id would trip the guard
   * falsely on restart. Skipped for multi-store sets (stride > 1: one mark
   * per residue class) and for tags that were refusing. Never throws.
   */
  async giveBackTail(): Promise<boolean> {
    if (!this.closed || !this.mayGiveBack) return false;
    this.mayGiveBack = false;
    const { store, marks, logger } = this.deps;
    // A load in flight at close() is dropped on arrival (see doLoad) but its range is ours to give back too.
    if (this.inflight) await settlesWithin(this.inflight, 1000);
    let tail = this.tail;
    const late = this.late;
    if (late) tail = tail && late.start === tail.end ? { from: tail.from, end: late.end } : { from: late.start, end: late.end };
    if (!tail || tail.from >= tail.end) return false;
    const range = tail;
    try {
      // Atomic against the server's other processes. Only while the server's
      // mark is exactly our tail's end is our range the last one recorded: a
      // higher mark means another worker allocated after us, a lower one that
      // another worker already gave back a later range (lowering it further
      // would uncover IDs that worker handed out).
      let ours = true;
      marks.update(this.tag, (mark) => {
        if (mark && (mark.trippedAtEpoch !== undefined || mark.mark !== (this.markedEnd ?? range.end))) ours = false;
        else if (mark && mark.mark > range.from) return { mark: range.from };
        return mark;
      });
      if (!ours) return false;
      const ok = await store.giveBack(this.tag, tail.end, tail.from, this.lastFenceEpoch);
      logger.info(
        { tag: this.tag, from: String(tail.from), to: String(tail.end), givenBack: ok },
        ok ? 'unused range given back' : 'unused range not given back: the store moved on',
      );
      return ok;
    } catch (e) {
      // The lowered mark still covers every ID handed out; the tail is a gap.
      logger.warn({ tag: this.tag, err: e instanceof Error ? e.message : String(e) }, 'give-back failed');
      return false;
    }
  }


  snapshot(): TagAllocatorSnapshot {
    const cur = this.buffer.current;
    const nxt = this.buffer.next;
    const remainingCurrent = this.buffer.remainingCurrent();
    return {
      tag: this.tag,
      current: cur && { start: cur.start, end: cur.end, next: this.buffer.peekCurrent() },
      next: nxt && { start: nxt.start, end: nxt.end },
      remaining: this.buffer.remaining(),
      remainingCurrent,
      nextReady: this.buffer.hasNext(),
      loading: this.inflight !== undefined,
      step: this.lastStep,
      storedStep: this.storedStep,
      lastLoadAt: this.lastLoadAt,
      lastLoadMs: this.lastLoadMs,
      loads: this.loads,
      loadFailures: this.loadFailures,
      lastError: this.lastError && { code: this.lastError.code, message: this.lastError.message },
      refusing: this.refusal?.code,
      currentSize: cur ? segmentSize(cur) : 0,
      nextSize: nxt ? segmentSize(nxt) : 0,
      issued: this.loadedIds - this.droppedIds - this.buffer.remaining(),
      instance: this.instance,
    };
  }

  private async nextSlow(): Promise<Id> {
    const out: Id[] = [];
    await this.fill(1, out);
    return out[0] as Id;
  }

  private async fill(n: number, out: Id[]): Promise<Id[]> {
    const { clock, options } = this.deps;
    const deadline = clock.now() + options.loadTimeoutMs;
    for (;;) {
      if (this.refusal) {
        // A fence made anywhere (CLI, another worker, another server) reopens the tag without a restart.
        if (!(await this.recheckFence())) throw this.refusal;
        continue;
      }
      if (this.closed) throw new UnavailableError('STORE_UNAVAILABLE', 'the service is shutting down');
      if (out.length < n) this.buffer.takeInto(n - out.length, out);
      if (out.length === n) return out;
      if (!this.inflight) {
        const now = clock.now();
        if (now < this.nextLoadAllowedAt) throw this.failure(this.nextLoadAllowedAt - now);
        void this.load();
      }
      const left = deadline - clock.now();
      if (left <= 0 || !(await settlesWithin(this.inflight, left))) {
        throw new UnavailableError(
          'SEGMENTS_EXHAUSTED',
          `tag ${JSON.stringify(this.tag)}: both segments are used up and the store did not answer within ${options.loadTimeoutMs} ms`,
          { retryAfterMs: 1000, cause: this.lastError },
        );
      }
    }
  }

  private failure(retryAfterMs: number): SequoiaError {
    const e = this.lastError;
    if (e && (e.code === 'TAG_NOT_FOUND' || e.code === 'ID_SPACE_EXHAUSTED' || e === this.markFailure)) return e;
    return new UnavailableError(
      'SEGMENTS_EXHAUSTED',
      `tag ${JSON.stringify(this.tag)}: both segments are used up and the last load failed${e ? ` (${e.code})` : ''}`,
      { retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)), cause: e },
    );
  }

  private async doLoad(): Promise<void> {
    const { store, marks, clock, logger, options } = this.deps;
    const startedAt = clock.now();
    const t0 = performance.now();
    const step = nextStep({
      previousStep: this.lastStep,
      previousLoadAt: this.lastLoadAt,
      now: startedAt,
      storedStep: this.storedStep ?? 1,
      maxStep: options.maxStep,
    });
    try {
      // Read before sending: every answer to this request starts at or above
      // these marks in a monotonic store, whichever process of the server set them.
      let floor: ReadonlyMap<string, HighWaterMark | undefined>;
      try {
        floor = this.readFloor();
      } catch (e) {
        throw (this.markFailure = markError(e));
      }
      if (this.markFailure) {
        // The last mark could not be written: prove the state directory takes a write before burning a range.
        try {
          marks.update(this.tag, (cur) => (cur ? { ...cur } : { mark: 0n }));
        } catch (e) {
          throw (this.markFailure = markError(e));
        }
        this.markFailure = undefined;
      }
      const plain = floor.get(this.tag);
      if (plain?.trippedAtEpoch !== undefined) {
        // Another process (or an earlier run) detected a rollback: refuse without allocating, unless fenced since.
        const info = await store.getTag(this.tag);
        if (info && info.fenceEpoch <= plain.trippedAtEpoch) {
          const reason = earlierTrip(plain.mark, marks.where);
          this.refuse(reason, plain.trippedAtEpoch);
          logger.error({ tag: this.tag, code: 'STORE_ROLLBACK_DETECTED' }, reason);
          this.loadFailures++;
          this.deps.onLoad?.(this.tag, false, (performance.now() - t0) / 1000);
          return;
        }
      }
      // The first load of a tag uses the stored step: we do not know it yet.
      const wanted = this.lastStep === undefined ? undefined : step;
      // Near 2^63-1 a doubled step may not fit where the stored one still does.
      const alloc = await store.allocate(this.tag, wanted).catch((e: unknown) => {
        if (wanted !== undefined && e instanceof SequoiaError && e.code === 'ID_SPACE_EXHAUSTED') {
          return store.allocate(this.tag);
        }
        throw e;
      });
      const ms = performance.now() - t0;
      // The newest answer's fence epoch: a give-back must not cross a fence made after it.
      this.lastFenceEpoch = alloc.fenceEpoch;
      if (this.closed) {
        if ((alloc.stride ?? 1) === 1) this.late = { start: alloc.maxId - BigInt(alloc.step), end: alloc.maxId };
        return;
      }
      const stride = alloc.stride ?? 1;
      const start = alloc.maxId - BigInt(alloc.step) * BigInt(stride);
      // Each store of a multi-store set rises only within its own residue
      // class, so each class keeps its own mark; the plain mark then only summarises, for fence.
      const markKey = stride === 1 ? this.tag : classKey(this.tag, stride, alloc.offset ?? 0);
      let verdict: ReturnType<typeof checkShared> | undefined;
      try {
        // Durable before any of these IDs can be handed out.
        marks.update(markKey, (current) => {
          verdict = checkShared(floor.has(markKey) ? floor.get(markKey) : current, current, start, alloc.maxId, alloc.fenceEpoch, marks.where);
          return verdict.record;
        });
        if (stride !== 1 && verdict?.ok) {
          marks.update(this.tag, (cur) => (!cur || cur.mark < alloc.maxId ? { mark: alloc.maxId, trippedAtEpoch: cur?.trippedAtEpoch } : cur));
        }
      } catch (e) {
        // Nothing of this range is handed out (a gap); the next load first proves the state directory writable.
        throw (this.markFailure = markError(e));
      }
      if (verdict?.ok && stride === 1) this.markedEnd = alloc.maxId;
      if (!verdict?.ok) {
        const reason = verdict && !verdict.ok ? verdict.reason : 'rollback';
        this.refuse(reason, verdict?.record.trippedAtEpoch ?? alloc.fenceEpoch);
        this.loadFailures++;
        this.deps.onLoad?.(this.tag, false, ms / 1000);
        logger.error({ tag: this.tag, start: String(start), end: String(alloc.maxId), code: 'STORE_ROLLBACK_DETECTED' }, reason);
        return;
      }
      const seg: Segment = { start, end: alloc.maxId, stride, step: alloc.step, loadedAt: clock.now() };
      this.buffer.offer(seg);
      this.loadedIds += segmentSize(seg);
      this.storedStep = alloc.storedStep;
      this.lastStep = alloc.step;
      this.lastLoadAt = startedAt;
      this.lastLoadMs = ms;
      this.loads++;
      this.consecutiveFailures = 0;
      this.lastError = undefined;
      this.deps.onLoad?.(this.tag, true, ms / 1000);
      logger.info(
        { tag: this.tag, start: String(start), end: String(alloc.maxId), step: alloc.step, ms: Math.round(ms * 10) / 10 },
        'segment loaded',
      );
    } catch (e) {
      const err =
        e instanceof SequoiaError
          ? e
          : new UnavailableError('STORE_UNAVAILABLE', 'segment load failed', { cause: e, retryAfterMs: 1000 });
      this.lastError = err;
      this.loadFailures++;
      this.consecutiveFailures++;
      const delay = Math.min(options.maxRetryDelayMs, options.minRetryDelayMs * 2 ** (this.consecutiveFailures - 1));
      this.nextLoadAllowedAt = clock.now() + delay;
      this.deps.onLoad?.(this.tag, false, (performance.now() - t0) / 1000);
      logger.warn({ tag: this.tag, code: err.code, err: err.message, retryInMs: delay }, 'segment load failed');
      if (this.retryTimer) clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.buffer.rearm();
      }, delay);
      this.retryTimer.unref();
    }
  }
}

/**
 * The IDs no caller can have received, as [from, end) with end = the store's
 * max_id after our last allocation: with a next range contiguous with the
 * current one, from the cursor to next.end; a next range alone otherwise;
 * else the current tail. Undefined when there is none or stride > 1.
 */
function unusedTail(buffer: SegmentBuffer): { from: bigint; end: bigint } | undefined {
  const cur = buffer.current;
  const nxt = buffer.next;
  if ((cur && cur.stride !== 1) || (nxt && nxt.stride !== 1)) return undefined;
  const cursor = buffer.peekCurrent();
  if (nxt) {
    if (cur && nxt.start === cur.end) return { from: cursor ?? nxt.start, end: nxt.end };
    return { from: nxt.start, end: nxt.end };
  }
  if (cur && cursor !== undefined) return { from: cursor, end: cur.end };
  return undefined;
}

const FENCE_RECHECK_MS = 1000;

function markError(e: unknown): SequoiaError {
  return e instanceof SequoiaError ? e : new UnavailableError('STORE_UNAVAILABLE', 'cannot record the high-water mark', { cause: e, retryAfterMs: 1000 });
}

/** The mark key of one residue class of a multi-store set ('#' is not legal in tags, so no tag has this key). */
function classKey(tag: string, stride: number, offset: number): string {
  return `${tag}#${stride}:${offset}`;
}

/** Resolves true when `p` settles within `ms`, false on timeout. */
async function settlesWithin(p: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  if (!p) return true;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
