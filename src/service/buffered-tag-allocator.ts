/**
 * One tag's allocator in segment mode: a SegmentBuffer plus the I/O around
 * it: background loads (one at a time), the step policy, the rollback guard,
 * bounded waiting when both segments are used up, and backoff after a failed
 * load.
 *
 * `next()` returns the ID itself while the buffer has one (no promise, no
 * allocation) and a promise only when it has to wait for the store; `await`
 * works on both.
 */
import { monotonicMs } from '../core/clock.js';
import { SequoiaError, UnavailableError } from '../core/errors.js';
import { systemTimers, type Timer, type Timers } from '../core/timers.js';
import type { Id } from '../core/id.js';
import { type Segment, SegmentBuffer, segmentSize } from '../core/segment/segment-buffer.js';
import { nextStep } from '../core/segment/step-policy.js';
import type { Allocation } from '../ports/segment-store.js';
import { newInstance, snapshotOf, type TagAllocator, type TagAllocatorDeps, type TagAllocatorSnapshot } from './tag-allocator.js';
import { TagGuard } from './tag-guard.js';

export class BufferedTagAllocator implements TagAllocator {
  readonly tag: string;
  private readonly instance = newInstance();
  private readonly buffer = new SegmentBuffer();
  private readonly deps: TagAllocatorDeps;
  private readonly timers: Timers;
  private readonly guard: TagGuard;
  private inflight: Promise<void> | undefined;
  private lastError: SequoiaError | undefined;
  private consecutiveFailures = 0;
  /** Monotonic ms: no load before it after a failure. */
  private nextLoadAllowedAt = Number.NEGATIVE_INFINITY;
  private retryTimer: Timer | undefined;
  private lastStep: number | undefined;
  /** Wall-clock time of the last load (shown), and its monotonic reading (for the step policy's "how long did it last"). */
  private lastLoadAt: number | undefined;
  private lastLoadMono: number | undefined;
  private lastLoadMs: number | undefined;
  private storedStep: number | undefined;
  private loads = 0;
  private loadFailures = 0;
  /** IDs accepted into the buffer, and IDs dropped from it unused: see `issued`. */
  private loadedIds = 0;
  private droppedIds = 0;
  /** The unused tail computed at close(), and a range that arrived after it, for giveBackTail(). */
  private tail: { readonly from: bigint; readonly end: bigint } | undefined;
  private late: { readonly start: bigint; readonly end: bigint; readonly generation: string } | undefined;
  /** The newest answer's fence epoch and tag generation: a give-back must not cross a fence or a re-creation made after it. */
  private lastAnswer: { readonly fenceEpoch: number; readonly generation: string } | undefined;
  /** The tag generation of the ranges this allocator accepted, per store of a set (offset; 0 for one store). */
  private readonly generations = new Map<number, string>();
  private mayGiveBack = false;

  constructor(tag: string, deps: TagAllocatorDeps) {
    this.tag = tag;
    this.deps = deps;
    this.timers = deps.timers ?? systemTimers;
    this.guard = new TagGuard(tag, deps, () => {
      this.lastError = undefined;
      this.nextLoadAllowedAt = Number.NEGATIVE_INFINITY;
    });
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
    if (this.guard.current) return Promise.resolve(); // refused, or closed (a closed tag is always refused)
    const p = this.doLoad().finally(() => {
      this.inflight = undefined;
    });
    this.inflight = p;
    return p;
  }

  /** After an operator's fence: forget the refusal so the next load is tried. */
  resetRefusal(): void {
    this.guard.lift();
  }

  /** While refused after a rollback: re-reads the fence epoch (at most once a second); resolves true when lifted. */
  recheckRefusal(): Promise<boolean> {
    return this.guard.recheckFence();
  }

  /** Stops background work and drops the buffer (the unused IDs become a gap). */
  close(reason?: SequoiaError): void {
    if (!this.guard.closed) {
      this.mayGiveBack = this.guard.current === undefined;
      this.tail = unusedTail(this.buffer);
    }
    this.guard.close(reason);
    this.dropBuffer();
    this.retryTimer?.clear();
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
    if (!this.guard.closed || !this.mayGiveBack) return false;
    this.mayGiveBack = false;
    const { store, logger } = this.deps;
    // A load in flight at close() is dropped on arrival (see doLoad) but its range is ours to give back too.
    if (this.inflight) await settlesWithin(this.timers, this.inflight, 1000);
    let tail = this.tail;
    const late = this.late;
    // Joined only within one creation of the tag: a late range of a tag created again never lets the old tail go back with it.
    const joins = tail !== undefined && late !== undefined && late.start === tail.end && late.generation === this.generations.get(0);
    if (late) tail = tail && joins ? { from: tail.from, end: late.end } : { from: late.start, end: late.end };
    // A tail exists only after an answer, so lastAnswer is set whenever there is one.
    if (!tail || tail.from >= tail.end || !this.lastAnswer) return false;
    try {
      // Atomic against the server's other processes.
      if (!(await this.guard.lowerMarkFor(tail.from, tail.end))) return false;
      const ok = await store.giveBack(this.tag, tail.from, { maxId: tail.end, ...this.lastAnswer });
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
    return {
      ...snapshotOf({
        tag: this.tag,
        instance: this.instance,
        loading: this.inflight !== undefined,
        lastLoadAt: this.lastLoadAt,
        lastLoadMs: this.lastLoadMs,
        loads: this.loads,
        loadFailures: this.loadFailures,
        lastError: this.lastError,
        refusing: this.guard.current,
        issued: this.loadedIds - this.droppedIds - this.buffer.remaining(),
      }),
      current: cur && { start: cur.start, end: cur.end, next: this.buffer.peekCurrent() },
      next: nxt && { start: nxt.start, end: nxt.end },
      remaining: this.buffer.remaining(),
      remainingCurrent: this.buffer.remainingCurrent(),
      nextReady: this.buffer.hasNext(),
      step: this.lastStep,
      storedStep: this.storedStep,
      currentSize: cur ? segmentSize(cur) : 0,
      nextSize: nxt ? segmentSize(nxt) : 0,
    };
  }

  private async nextSlow(): Promise<Id> {
    const out: Id[] = [];
    await this.fill(1, out);
    return out[0] as Id;
  }

  private async fill(n: number, out: Id[]): Promise<Id[]> {
    const { clock, options } = this.deps;
    const deadline = monotonicMs(clock) + options.loadTimeoutMs;
    for (;;) {
      if (this.guard.current) {
        // A fence made anywhere (CLI, another worker, another server) reopens the tag without a restart.
        if (!(await this.guard.recheckFence())) throw this.guard.current;
        continue;
      }
      if (out.length < n) this.buffer.takeInto(n - out.length, out);
      if (out.length === n) return out;
      if (!this.inflight) {
        const now = monotonicMs(clock);
        if (now < this.nextLoadAllowedAt) throw this.failure(this.nextLoadAllowedAt - now);
        void this.load();
      }
      const left = deadline - monotonicMs(clock);
      if (left <= 0 || !(await settlesWithin(this.timers, this.inflight, left))) {
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
    if (e && (e.code === 'TAG_NOT_FOUND' || e.code === 'ID_SPACE_EXHAUSTED' || e === this.guard.markFailure)) return e;
    return new UnavailableError(
      'SEGMENTS_EXHAUSTED',
      `tag ${JSON.stringify(this.tag)}: both segments are used up and the last load failed${e ? ` (${e.code})` : ''}`,
      { retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)), cause: e },
    );
  }

  /** One load: each step below either hands over to the next or ends the load (refused, failed, or closed meanwhile). */
  private async doLoad(): Promise<void> {
    const startedAt = this.deps.clock.now();
    const startedMono = monotonicMs(this.deps.clock);
    const t0 = startedMono;
    const step = this.stepAt(startedMono);
    try {
      const floor = await this.guard.floor();
      // Closed while the marks were read (off the event loop): no range is taken for nobody.
      if (this.guard.closed) return;
      const alloc = await this.allocate(step);
      const ms = monotonicMs(this.deps.clock) - t0;
      this.lastAnswer = { fenceEpoch: alloc.fenceEpoch, generation: alloc.generation };
      if (this.guard.closed) return this.keepLate(alloc);
      const previousGeneration = this.noteGeneration(alloc);
      const stride = alloc.stride ?? 1;
      const start = alloc.maxId - BigInt(alloc.step) * BigInt(stride);
      const range = {
        start,
        end: alloc.maxId,
        fenceEpoch: alloc.fenceEpoch,
        generation: alloc.generation,
        stride,
        offset: alloc.offset ?? 0,
      };
      const admission = await this.guard.admit(range, floor, generationNote(previousGeneration, alloc.generation));
      if (!admission.ok) return this.refused(admission.refusal, ms);
      // Closed while the mark was written (off the event loop): kept for the give-back, never served.
      if (this.guard.closed) return this.keepLate(alloc);
      this.accept(alloc, start, startedAt, startedMono, ms);
    } catch (e) {
      // A rollback recorded earlier (by another process or run) and not fenced since: refused without allocating.
      const refusal = this.guard.current;
      if (refusal !== undefined && e === refusal) this.refused(refusal, monotonicMs(this.deps.clock) - t0);
      else this.recordFailure(e, t0);
    }
  }

  /** `now`: monotonic ms. */
  private stepAt(now: number): number {
    return nextStep({
      previousStep: this.lastStep,
      previousLoadAt: this.lastLoadMono,
      now,
      storedStep: this.storedStep ?? 1,
      maxStep: this.deps.options.maxStep,
    });
  }

  private allocate(step: number): Promise<Allocation> {
    const { store } = this.deps;
    // The first load of a tag uses the stored step: we do not know it yet.
    const wanted = this.lastStep === undefined ? undefined : step;
    // Near 2^63-1 a doubled step may not fit where the stored one still does.
    return store.allocate(this.tag, wanted).catch((e: unknown) => {
      if (wanted !== undefined && e instanceof SequoiaError && e.code === 'ID_SPACE_EXHAUSTED') {
        return store.allocate(this.tag);
      }
      throw e;
    });
  }

  /**
   * The generation of the answer against the ranges accepted before: when it
   * changed, the tag was deleted and created again since our last range, and
   * what is still buffered belongs to the deleted tag. Those IDs are dropped
   * (a gap): the new tag may hand them out elsewhere, or already has. Answers
   * the previous generation when it changed.
   */
  private noteGeneration(alloc: Allocation): string | undefined {
    const key = alloc.offset ?? 0;
    const before = this.generations.get(key);
    this.generations.set(key, alloc.generation);
    if (before === undefined || before === alloc.generation) return undefined;
    const dropped = this.buffer.remaining();
    this.dropBuffer();
    this.deps.logger.warn(
      { tag: this.tag, generation: alloc.generation, previousGeneration: before, dropped },
      'the tag was deleted and created again: the IDs still buffered from the deleted tag are dropped',
    );
    return before;
  }

  /** The generation of the ranges this allocator serves (one store; undefined before the first range or on a multi-store set). */
  get generation(): string | undefined {
    return (this.deps.store.stride ?? 1) === 1 ? this.generations.get(0) : undefined;
  }

  /** A range that arrived after close(): never served, but kept for giveBackTail(). */
  private keepLate(alloc: Allocation): void {
    if ((alloc.stride ?? 1) === 1) this.late = { start: alloc.maxId - BigInt(alloc.step), end: alloc.maxId, generation: alloc.generation };
  }

  /** Refused by the guard (a rollback, or closed meanwhile); the buffered IDs become a gap. */
  private refused(refusal: SequoiaError, ms: number): void {
    this.lastError = refusal;
    this.dropBuffer();
    this.loadFailures++;
    this.deps.onLoad?.(this.tag, false, ms / 1000);
  }

  private accept(alloc: Allocation, start: bigint, startedAt: number, startedMono: number, ms: number): void {
    const seg: Segment = { start, end: alloc.maxId, stride: alloc.stride ?? 1, step: alloc.step, loadedAt: this.deps.clock.now() };
    this.buffer.offer(seg);
    this.loadedIds += segmentSize(seg);
    this.storedStep = alloc.storedStep;
    this.lastStep = alloc.step;
    this.lastLoadAt = startedAt;
    this.lastLoadMono = startedMono;
    this.lastLoadMs = ms;
    this.loads++;
    this.consecutiveFailures = 0;
    this.lastError = undefined;
    this.deps.onLoad?.(this.tag, true, ms / 1000);
    this.deps.logger.info(
      { tag: this.tag, start: String(start), end: String(alloc.maxId), step: alloc.step, ms: Math.round(ms * 10) / 10 },
      'segment loaded',
    );
  }

  /** A failed load: remembered for callers, retried after a doubling delay. */
  private recordFailure(e: unknown, t0: number): void {
    const { clock, logger, options } = this.deps;
    const err =
      e instanceof SequoiaError ? e : new UnavailableError('STORE_UNAVAILABLE', 'segment load failed', { cause: e, retryAfterMs: 1000 });
    this.lastError = err;
    this.loadFailures++;
    this.consecutiveFailures++;
    const delay = Math.min(options.maxRetryDelayMs, options.minRetryDelayMs * 2 ** (this.consecutiveFailures - 1));
    const now = monotonicMs(clock);
    this.nextLoadAllowedAt = now + delay;
    this.deps.onLoad?.(this.tag, false, (now - t0) / 1000);
    logger.warn({ tag: this.tag, code: err.code, err: err.message, retryInMs: delay }, 'segment load failed');
    this.retryTimer?.clear();
    this.retryTimer = this.timers
      .after(delay, () => {
        this.retryTimer = undefined;
        this.buffer.rearm();
      })
      .unref();
  }

  private dropBuffer(): void {
    this.droppedIds += this.buffer.remaining();
    this.buffer.clear();
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

/** The guard names both causes of a rollback; when this process saw both generations it knows which. */
function generationNote(previous: string | undefined, now: string): string {
  if (previous === undefined) return '';
  return ` (here: the tag was deleted and created again, generation ${previous} -> ${now}; refused like a restored store until \`sequoia fence\`)`;
}

/** Resolves true when `p` settles within `ms`, false on timeout. */
async function settlesWithin(timers: Timers, p: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  if (!p) return true;
  let timer: Timer | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = timers.after(ms, () => resolve(false));
  });
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    timer?.clear();
  }
}
