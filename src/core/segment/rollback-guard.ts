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
}

export type GuardVerdict =
  | { readonly ok: true; readonly record: HighWaterMark }
  | { readonly ok: false; readonly record: HighWaterMark; readonly reason: string };

/**
 * `where`: where the marks are kept (e.g. `state dir ./data`), so a refusal
 * names it, whether a server or a CLI command holds them.
 */
export function checkAnswer(
  previous: HighWaterMark | undefined,
  start: bigint,
  end: bigint,
  epoch: number,
  where?: string,
): GuardVerdict {
  const kept = where === undefined ? '' : ` kept in ${where}`;
  if (previous === undefined) return { ok: true, record: { mark: end } };
  if (previous.trippedAtEpoch !== undefined && epoch <= previous.trippedAtEpoch) {
    return {
      ok: false,
      record: previous,
      reason: `a rollback was detected earlier (high-water mark ${previous.mark}${kept}); run \`sequoia fence\``,
    };
  }
  if (start < previous.mark) {
    return {
      ok: false,
      record: { mark: previous.mark, trippedAtEpoch: epoch },
      reason: `store answered [${start}, ${end}) below the high-water mark ${previous.mark}${kept}`,
    };
  }
  return { ok: true, record: { mark: end > previous.mark ? end : previous.mark } };
}
