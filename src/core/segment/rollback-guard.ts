/**
 * The rollback guard. A store is monotonic: every answer starts at or above
 * every earlier answer's end. An answer that starts below the highest end this
 * server has accepted (its high-water mark) means the store went back in time,
 * e.g. was restored from an old snapshot, and may hand out IDs again.
 *
 * Once tripped, a tag stays refused, across restarts, until an operator fences
 * the store: `fence` raises max_id to a safe bound and bumps the tag's fence
 * epoch, and an answer carrying a newer epoch than the one seen at the trip is
 * accepted again (if it also clears the mark).
 */
export interface HighWaterMark {
  /** The highest segment end accepted for the tag. */
  readonly mark: bigint;
  /** Set when a rollback was detected: the store's fence epoch at that time. */
  readonly trippedAtEpoch?: number | undefined;
  /**
   * The creation of the tag (TagInfo.generation) whose answer tripped: its
   * fence epochs are the ones `trippedAtEpoch` counts. Absent in records of
   * earlier versions (and of multi-store sets' summaries): the trip then
   * stands, whatever the creation, until a fence epoch above `trippedAtEpoch`.
   */
  readonly trippedGeneration?: string | undefined;
  /**
   * The ranges [start, end) this server (all its processes) accepted and did
   * not give back: ascending, apart, the last ending at `mark`, at most
   * KEPT_RANGES (the lowest forgotten: the floor judges below them). Absent (a record
   * of an earlier version, or all of [0, mark)), or not matching `mark` (an
   * earlier version wrote the mark since): everything below `mark` counts.
   */
  readonly ranges?: readonly AcceptedRange[] | undefined;
}

/**
 * Whether the trip recorded in `record` still refuses an answer (or a tag)
 * at `fenceEpoch` of creation `generation`: until a fence of the creation it
 * was recorded under, or of a later creation. A tag deleted and created
 * again starts its fence epochs at 0, so for another creation than the
 * trip's, any fence (epoch above 0) lifts it; the new creation is then judged
 * by the mark alone, which still refuses a creation below it. `generation`
 * undefined, or a record without one: the epochs are compared as they are.
 */
export function tripStands(record: HighWaterMark | undefined, fenceEpoch: number, generation?: string): boolean {
  const at = record?.trippedAtEpoch;
  if (at === undefined) return false;
  const tripped = record?.trippedGeneration;
  if (generation === undefined || tripped === undefined || tripped === generation) return fenceEpoch <= at;
  return fenceEpoch === 0;
}

/** [start, end) of one tag's IDs a server accepted from the store. */
export type AcceptedRange = readonly [start: bigint, end: bigint];

/** Ranges kept per mark: ranges of busy servers interleave, and the record is written before every answer. */
export const KEPT_RANGES = 32;

/**
 * A refusal's `reason` names where the marks are kept, for the operator;
 * `publicReason` is the same sentence without it, for a client. Both plain
 * strings: a verdict crosses to and from the state dir's thread.
 */
export type GuardVerdict =
  | { readonly ok: true; readonly record: HighWaterMark }
  | { readonly ok: false; readonly record: HighWaterMark; readonly reason: string; readonly publicReason: string };

/**
 * `where`: where the marks are kept (e.g. `state dir ./data`), so a refusal
 * names it to the operator, whether a server or a CLI command holds them.
 */
export function checkAnswer(
  previous: HighWaterMark | undefined,
  start: bigint,
  end: bigint,
  fenceEpoch: number,
  where?: string,
  generation?: string,
): GuardVerdict {
  if (previous === undefined) return { ok: true, record: { mark: end } };
  if (tripStands(previous, fenceEpoch, generation)) {
    return { ok: false, record: previous, reason: earlierTrip(previous.mark, where), publicReason: earlierTrip(previous.mark) };
  }
  if (start < previous.mark) {
    const mark = previous.mark;
    // Both causes look alike here (the marks are kept by tag name): say both.
    const say = (w: string | undefined) =>
      `store answered [${start}, ${end}) below the high-water mark ${mark}${w === undefined ? '' : ` kept in ${w}`}: ` +
      'restored from an older backup, or the tag deleted and created again below IDs handed out here';
    const record = { mark, trippedAtEpoch: fenceEpoch, trippedGeneration: generation };
    return { ok: false, record, reason: say(where), publicReason: say(undefined) };
  }
  return { ok: true, record: { mark: end > previous.mark ? end : previous.mark } };
}

/**
 * The guard for a server whose processes share one set of marks. Two
 * allocations of a store never overlap, so an answer overlapping a range the
 * server accepted (by any of its processes, whenever) is a repeat: the store
 * went back. This holds whatever the timing, unlike the floor alone: a floor
 * read before another process recorded its range does not cover that range,
 * and a store failed over between that process's commit and this request
 * answers it again (sim seed 17).
 *
 * `floor` is the mark as read before the request was sent: a monotonic store
 * answers every later request at or above it, whichever process raised it,
 * so an answer below it is a rollback too, even into another server's range.
 * `current` is the record as it is now (other processes may have raised it
 * meanwhile with answers of their own, which is no alarm, or recorded a
 * trip, which refuses here too). A current mark below the floor was lowered
 * by a give-back since the floor was read: the answer is then judged by the
 * current mark. `parts`: the ranges of one record of several answers
 * (`[start, end)` is their hull), each accepted on its own.
 */
export function checkShared(
  floor: HighWaterMark | undefined,
  current: HighWaterMark | undefined,
  start: bigint,
  end: bigint,
  fenceEpoch: number,
  where?: string,
  generation?: string,
  parts?: readonly AcceptedRange[],
): GuardVerdict {
  if (current && tripStands(current, fenceEpoch, generation)) {
    return { ok: false, record: current, reason: earlierTrip(current.mark, where), publicReason: earlierTrip(current.mark) };
  }
  const base = floor && current && current.mark < floor.mark ? current : floor;
  const v = checkAnswer(base && { mark: base.mark }, start, end, fenceEpoch, where, generation);
  const top = (a: bigint, b: bigint | undefined) => (b !== undefined && b > a ? b : a);
  let accepted = acceptedRanges(current);
  for (const [s, e] of parts ?? [[start, end] as const]) {
    const over = v.ok ? accepted.find(([a, b]) => a < e && s < b) : undefined;
    if (over) {
      const say = (w: string | undefined) =>
        `store answered [${s}, ${e}) over [${over[0]}, ${over[1]}), IDs accepted here before${w === undefined ? '' : ` (kept in ${w})`}: ` +
        'failed over to a replica behind, restored from an older backup, or the tag deleted and created again below IDs handed out here';
      // The refused range is not accepted: the record keeps its ranges and only notes the trip.
      return {
        ok: false,
        record: tripped({ ...current, mark: current?.mark ?? e }, fenceEpoch, generation),
        reason: say(where),
        publicReason: say(undefined),
      };
    }
    accepted = withRange(accepted, s, e);
  }
  if (!v.ok) return { ...v, record: tripped({ ...current, mark: top(v.record.mark, current?.mark) }, fenceEpoch, generation) };
  return { ok: true, record: recordOf(accepted) };
}

/**
 * The record after a give-back of [from, end): those IDs are no longer
 * counted as accepted (the store may answer them again), every other range
 * stays, and the mark is the end of the highest one left.
 */
export function withoutRange(record: HighWaterMark, from: bigint, end: bigint): HighWaterMark {
  const left: AcceptedRange[] = [];
  for (const [a, b] of acceptedRanges(record)) {
    if (b <= from || a >= end) left.push([a, b]);
    else {
      if (a < from) left.push([a, from]);
      if (b > end) left.push([end, b]);
    }
  }
  const kept = recordOf(left);
  return record.trippedAtEpoch === undefined ? kept : tripped(kept, record.trippedAtEpoch, record.trippedGeneration);
}

/** The ranges a record counts as accepted (see `HighWaterMark.ranges`). */
export function acceptedRanges(record: HighWaterMark | undefined): readonly AcceptedRange[] {
  if (record === undefined) return [];
  const r = record.ranges;
  if (r !== undefined && fits(r, record.mark)) return r;
  return record.mark > 0n ? [[0n, record.mark]] : [];
}

/** Ranges as this module writes them, ending at `mark`: a range list written before an earlier version moved the mark does not. */
function fits(ranges: readonly AcceptedRange[], mark: bigint): boolean {
  let prev = -1n;
  for (const [a, b] of ranges) {
    if (typeof a !== 'bigint' || typeof b !== 'bigint' || a <= prev || b <= a) return false;
    prev = b;
  }
  return ranges.length > 0 && prev === mark;
}

/**
 * `ranges` with [start, end) added, merged with its neighbours; past
 * KEPT_RANGES the lowest are forgotten. Merging them into one span would
 * cover the gaps between them, and an answer delayed past that many of the
 * other processes' ranges lands in a gap legitimately (sim seeds 151, 282:
 * a false refusal); below the ranges kept, the floor read before the
 * request was sent still judges an answer.
 */
function withRange(ranges: readonly AcceptedRange[], start: bigint, end: bigint): AcceptedRange[] {
  const out: AcceptedRange[] = [];
  let s = start;
  let e = end;
  let placed = false;
  for (const [a, b] of ranges) {
    if (b < s) out.push([a, b]);
    else if (a > e) {
      if (!placed) out.push([s, e]);
      placed = true;
      out.push([a, b]);
    } else {
      if (a < s) s = a;
      if (b > e) e = b;
    }
  }
  if (!placed) out.push([s, e]);
  if (out.length > KEPT_RANGES) out.splice(0, out.length - KEPT_RANGES);
  return out;
}

/** A record of these ranges; `ranges` left out when they are all of [0, mark), which its absence means. */
function recordOf(ranges: readonly AcceptedRange[]): HighWaterMark {
  const last = ranges[ranges.length - 1];
  const mark = last ? last[1] : 0n;
  const whole = ranges.length === 0 || (ranges.length === 1 && (ranges[0] as AcceptedRange)[0] === 0n);
  return whole ? { mark } : { mark, ranges };
}

/** `record` with a trip at `fenceEpoch` of creation `generation` (none: the record says no creation). */
function tripped(record: HighWaterMark, fenceEpoch: number, generation: string | undefined): HighWaterMark {
  const { trippedGeneration: _, ...rest } = record;
  return generation === undefined
    ? { ...rest, trippedAtEpoch: fenceEpoch }
    : { ...rest, trippedAtEpoch: fenceEpoch, trippedGeneration: generation };
}

/** The refusal of a tag whose rollback was recorded earlier, naming where the mark is kept. */
export function earlierTrip(mark: bigint, where?: string): string {
  return `a rollback was detected earlier (high-water mark ${mark}${where === undefined ? '' : ` kept in ${where}`}); run \`sequoia fence\``;
}
