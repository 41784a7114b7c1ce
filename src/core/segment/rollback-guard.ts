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
 * The guard for a server whose processes share one set of marks. `floor` is
 * the mark as read before the request was sent: a monotonic store answers
 * every later request at or above it, whichever process raised it. `current`
 * is the mark as it is now (other processes may have raised it meanwhile with
 * answers of their own, which is no alarm, or recorded a trip, which refuses
 * here too). The record to store is the highest mark seen, tripped or not.
 *
 * A current mark below the floor was lowered by a give-back since the floor
 * was read (the only way a mark goes down): another process stopped and gave
 * its unused tail back, so the store's max_id went back with it. The answer
 * is then judged by the current mark, which still covers every ID the
 * server's processes handed out.
 */
export function checkShared(
  floor: HighWaterMark | undefined,
  current: HighWaterMark | undefined,
  start: bigint,
  end: bigint,
  fenceEpoch: number,
  where?: string,
  generation?: string,
): GuardVerdict {
  if (current && tripStands(current, fenceEpoch, generation)) {
    return { ok: false, record: current, reason: earlierTrip(current.mark, where), publicReason: earlierTrip(current.mark) };
  }
  const base = floor && current && current.mark < floor.mark ? current : floor;
  const v = checkAnswer(base && { mark: base.mark }, start, end, fenceEpoch, where, generation);
  const top = (a: bigint, b: bigint | undefined) => (b !== undefined && b > a ? b : a);
  if (!v.ok) return { ...v, record: { ...v.record, mark: top(v.record.mark, current?.mark) } };
  return { ok: true, record: { mark: top(end, current?.mark) } };
}

/** The refusal of a tag whose rollback was recorded earlier, naming where the mark is kept. */
export function earlierTrip(mark: bigint, where?: string): string {
  return `a rollback was detected earlier (high-water mark ${mark}${where === undefined ? '' : ` kept in ${where}`}); run \`sequoia fence\``;
}
