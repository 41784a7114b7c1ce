/**
 * The rollback guard of one tag's allocator, the same for every mode: the
 * marks a request's answer will be judged by (read before it is sent), the
 * admission of the answer with its mark recorded durably before any of its
 * IDs is handed out, the refusal in force (a rollback until an operator
 * fences the store from anywhere, or the tag closed), and the lowering of
 * the mark for a give-back. The rule itself is `core/segment/rollback-guard.ts`;
 * the allocators only ask this class and hand out what it admits.
 */
import { monotonicMs } from '../core/clock.js';
import { SequoiaError, TagNotFoundError, UnavailableError } from '../core/errors.js';
import {
  checkAnswer,
  checkShared,
  earlierTrip,
  tripStands,
  withoutRange,
  type AcceptedRange,
  type GuardVerdict,
  type HighWaterMark,
} from '../core/segment/rollback-guard.js';
import type { TagAllocatorDeps } from './tag-allocator.js';

const FENCE_RECHECK_MS = 1000;

type GuardDeps = Pick<TagAllocatorDeps, 'store' | 'marks' | 'clock' | 'logger'>;

/** The server-wide marks (all processes) as read before a request was sent: the tag's, or one per residue class of a multi-store set. */
export type Floor = ReadonlyMap<string, HighWaterMark | undefined>;

/**
 * A store's answer: [start, end), with the fence epoch and the tag creation
 * (Allocation.generation) it carried; `stride` and `offset` for a member of a
 * multi-store set; `parts`: the answers one record covers, when [start, end)
 * is their hull (`admitAll`).
 */
export interface AnsweredRange {
  readonly start: bigint;
  readonly end: bigint;
  readonly fenceEpoch: number;
  readonly generation?: string | undefined;
  readonly stride: number;
  readonly offset: number;
  readonly parts?: readonly AcceptedRange[];
}

export type Admission = { readonly ok: true } | { readonly ok: false; readonly refusal: SequoiaError };

const ADMITTED: Admission = { ok: true };

export class TagGuard {
  private readonly tag: string;
  private readonly deps: GuardDeps;
  private readonly onLift: () => void;
  /** A failure that no retry can fix without an operator (rollback) or a new tag (deleted), or the server shutting down. */
  private refusal: SequoiaError | undefined;
  /** While refused after a rollback: the trip's fence epoch. */
  private refusedAtFenceEpoch: number | undefined;
  /** While refused after a rollback: the creation of the tag the trip was recorded under, when known. */
  private refusedAtGeneration: string | undefined;
  /** Monotonic ms of the last read of the store's fence epoch while refused. */
  private fenceCheckedAt = Number.NEGATIVE_INFINITY;
  private fenceCheck: Promise<void> | undefined;
  private isClosed = false;
  /** The last mark could not be written: the next request first proves the marks writable, so no range is taken for nothing. */
  private markError: SequoiaError | undefined;

  /** `onLift` runs whenever the refusal is lifted (an operator's fence), for the holder's own retry state. */
  constructor(tag: string, deps: GuardDeps, onLift: () => void = () => {}) {
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

  /** The failure to write a mark, while it stands: callers get it as is (an operator must free the disk), not as a store failure. */
  get markFailure(): SequoiaError | undefined {
    return this.markError;
  }

  /**
   * Read before a request is sent: a monotonic store answers it at or above
   * these marks, whichever process of the server set them. Throws the
   * refusal in force, a rollback recorded earlier (by another process or
   * run) that no fence lifted since, or marks that still cannot be written.
   */
  async floor(): Promise<Floor> {
    if (this.refusal) throw this.refusal;
    let floor = await this.readFloor();
    if (this.markError) await this.proveMarksWritable();
    const plain = floor.get(this.tag);
    if (plain?.trippedAtEpoch !== undefined) {
      if (await this.tripStandsInStore(plain))
        throw this.refuse(
          { reason: earlierTrip(plain.mark, this.deps.marks.where), publicReason: earlierTrip(plain.mark) },
          { fenceEpoch: plain.trippedAtEpoch, generation: plain.trippedGeneration },
        );
      floor = await this.readFloor(); // fenced since: the marks as they are now
    }
    return floor;
  }

  /**
   * Checks a store's answer against the ranges the server's processes
   * accepted and the floor read before the request was sent, and records
   * the range in the mark, durable before any of these IDs can be
   * handed out. A rollback refuses the tag until a fence (`note` adds what
   * the caller knows of the cause). Throws when the mark cannot be written
   * (nothing of the range may be handed out: a gap).
   */
  async admit(range: AnsweredRange, floor: Floor, note = ''): Promise<Admission> {
    const { marks } = this.deps;
    const key = range.stride === 1 ? this.tag : classKey(this.tag, range.stride, range.offset);
    let verdict: GuardVerdict | undefined;
    try {
      if (marks.admitRange && floor.has(key)) {
        verdict = await marks.admitRange(key, floor.get(key), range.start, range.end, range.fenceEpoch, range.generation, range.parts);
      } else {
        await marks.update(key, (current) => {
          const base = floor.has(key) ? floor.get(key) : current;
          verdict = checkShared(base, current, range.start, range.end, range.fenceEpoch, marks.where, range.generation, range.parts);
          return verdict.record;
        });
      }
      // Each store of a set rises only within its residue class, so each class has its own mark; the plain one only summarises, for fence.
      if (range.stride !== 1 && verdict?.ok) {
        await marks.update(this.tag, (cur) => (!cur || cur.mark < range.end ? { ...cur, mark: range.end } : cur));
      }
    } catch (e) {
      throw (this.markError = markError(e));
    }
    const v = verdict as GuardVerdict | undefined;
    if (v === undefined) throw (this.markError = markError(new Error('the marks store did not read the mark')));
    if (v.ok) return ADMITTED;
    const at = { start: String(range.start), end: String(range.end) };
    const why = { reason: v.reason + note, publicReason: v.publicReason + note };
    const trip =
      v.record.trippedAtEpoch === undefined ? range : { fenceEpoch: v.record.trippedAtEpoch, generation: v.record.trippedGeneration };
    return { ok: false, refusal: this.refuse(why, { fenceEpoch: trip.fenceEpoch, generation: trip.generation }, at) };
  }

  /**
   * Answers of one store in the order their requests were sent, each with the
   * floor read before it was sent, admitted with ONE durable mark record (a
   * strict tag's batches answered while the previous mark was recorded).
   * Each later answer is checked against its own floor here, as `admit`
   * would; the first, and the record of the highest end, go through `admit`.
   * The record keeps each answer's range, not their hull: another
   * process's answer may lie between them. Undefined, with nothing recorded, when the answers are not one
   * store's plain ranges under one fence epoch, or a later one fails its
   * check: the caller admits them one by one, so a refusal falls on the
   * answer that caused it and on those after it.
   */
  async admitAll(answers: ReadonlyArray<{ readonly range: AnsweredRange; readonly floor: Floor }>): Promise<Admission | undefined> {
    const [first, ...rest] = answers;
    if (!first) return ADMITTED;
    if (rest.length === 0) return this.admit(first.range, first.floor);
    let end = first.range.end;
    const parts: AcceptedRange[] = [];
    for (const { range, floor } of [first, ...rest]) {
      if (range.stride !== 1 || range.fenceEpoch !== first.range.fenceEpoch) return undefined;
      if (range.generation !== first.range.generation) return undefined;
      if (
        range !== first.range &&
        !checkAnswer(floor.get(this.tag), range.start, range.end, range.fenceEpoch, undefined, range.generation).ok
      )
        return undefined;
      if (range.end > end) end = range.end;
      parts.push([range.start, range.end]);
    }
    return this.admit({ ...first.range, end, parts }, first.floor);
  }

  /**
   * For a give-back of [from, end): takes that range out of the server's
   * accepted ranges (the store may answer it again), never while a trip
   * stands. Only this range: ranges other workers accepted, below or above
   * it, stay covered, so a give-back that follows another (another server's
   * range given back whole first, so max_id is back at our end) leaves no
   * mark above what the server answered (sim seed 30). Resolves false when
   * the range is not to be given back.
   */
  async lowerMarkFor(from: bigint, end: bigint): Promise<boolean> {
    let ours = true;
    await this.deps.marks.update(this.tag, (mark) => {
      if (mark?.trippedAtEpoch !== undefined) ours = false;
      else if (mark) return withoutRange(mark, from, end);
      return mark;
    });
    return ours;
  }

  /** After an operator's fence: forget the refusal (a closed tag stays refused). */
  lift(): void {
    if (this.isClosed) return;
    this.refusal = undefined;
    this.refusedAtFenceEpoch = undefined;
    this.refusedAtGeneration = undefined;
    this.onLift();
  }

  /**
   * The tag stops being served: refused for good with `reason` (the tag gone
   * by default; the server shutting down on close), keeping a rollback
   * refusal already in force.
   */
  close(reason: SequoiaError = new TagNotFoundError(this.tag)): void {
    this.isClosed = true;
    this.refusal ??= reason;
  }

  /**
   * While refused after a rollback, reads the tag's fence epoch from the store
   * (at most once a second, timed on the monotonic clock: a wall clock stepped
   * back must not hold the refusal until it catches up): a newer epoch than the trip's
   * (or any fence of a later creation of the tag) means an operator
   * fenced the store, so the refusal is lifted. Resolves true when it was.
   */
  recheckFence(): Promise<boolean> {
    const at = this.refusedAtFenceEpoch;
    if (at === undefined || this.isClosed) return Promise.resolve(false);
    const trip = { mark: 0n, trippedAtEpoch: at, trippedGeneration: this.refusedAtGeneration };
    const now = monotonicMs(this.deps.clock);
    if (!this.fenceCheck && now - this.fenceCheckedAt >= FENCE_RECHECK_MS) {
      this.fenceCheckedAt = now;
      this.fenceCheck = this.deps.store
        .getTag(this.tag)
        .then((info) => {
          if (info && !tripStands(trip, info.fenceEpoch, this.generationOf(info)) && this.refusedAtFenceEpoch === at) {
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
    return pending ? pending.then(() => this.refusedAtFenceEpoch === undefined) : Promise.resolve(false);
  }

  private async readFloor(): Promise<Floor> {
    const { marks, store } = this.deps;
    const n = store.stride ?? 1;
    const keys = n === 1 ? [this.tag] : Array.from({ length: n }, (_, i) => classKey(this.tag, n, i));
    try {
      const values = await Promise.all(keys.map((k) => marks.get(k)));
      return new Map(keys.map((k, i) => [k, values[i]]));
    } catch (e) {
      throw (this.markError = markError(e));
    }
  }

  /** The last mark could not be written: prove the marks take a write before a range is burnt. */
  private async proveMarksWritable(): Promise<void> {
    try {
      await this.deps.marks.update(this.tag, (cur) => (cur ? { ...cur } : { mark: 0n }));
    } catch (e) {
      throw (this.markError = markError(e));
    }
    this.markError = undefined;
  }

  /** Whether a rollback recorded in a mark still stands: the store was not fenced since (`tripStands`). */
  private async tripStandsInStore(record: HighWaterMark): Promise<boolean> {
    const info = await this.deps.store.getTag(this.tag);
    return info ? tripStands(record, info.fenceEpoch, this.generationOf(info)) : false;
  }

  /**
   * The creation a tag's row is, to compare with a trip's: one store's
   * generation. A multi-store set's is a list of its members' (each with its
   * own fence epochs): undefined, so its epochs are compared as they are.
   */
  private generationOf(info: { readonly generation: string }): string | undefined {
    return (this.deps.store.stride ?? 1) === 1 ? info.generation : undefined;
  }

  /**
   * Refuses the tag after a rollback, until a fence newer than `trip`'s, with
   * one log line (`at`: the answer's range, when one was seen). A refusal
   * already in force stays (another answer of the tag refused it first, or
   * it closed meanwhile): one refusal, one line. `reason` names where the
   * marks are kept (the operator's), `publicReason` does not (a client's).
   */
  private refuse(
    { reason, publicReason }: { readonly reason: string; readonly publicReason: string },
    trip: { readonly fenceEpoch: number; readonly generation: string | undefined },
    at: { start: string; end: string } | undefined = undefined,
  ): SequoiaError {
    if (this.refusal) return this.refusal;
    const where = this.deps.marks.where;
    const tag = `tag ${JSON.stringify(this.tag)}: `;
    const e = new UnavailableError('STORE_ROLLBACK_DETECTED', tag + reason, {
      located: where === undefined ? undefined : { publicMessage: tag + publicReason, detail: where },
    });
    this.refusal = e;
    this.refusedAtFenceEpoch = trip.fenceEpoch;
    this.refusedAtGeneration = trip.generation;
    this.deps.logger.error({ tag: this.tag, ...at, code: e.code }, reason);
    return e;
  }
}

/** The mark key of one residue class of a multi-store set ('#' is not legal in tags, so no tag has this key). */
export function classKey(tag: string, stride: number, offset: number): string {
  return `${tag}#${stride}:${offset}`;
}

function markError(e: unknown): SequoiaError {
  return e instanceof SequoiaError
    ? e
    : new UnavailableError('STORE_UNAVAILABLE', 'cannot record the high-water mark', { cause: e, retryAfterMs: 1000 });
}
