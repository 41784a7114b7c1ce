/**
 * Where a tag name may start again without repeating its IDs, and how that is
 * said to an operator (`tag delete`, `tag create`). A name's IDs are promised
 * unique across its deletes and re-creations, but the tag row only knows its
 * current creation: a name created again lower by mistake and deleted again
 * has a small max_id while the first creation's IDs lie far above it. The
 * range ledger keeps every creation's ranges, so it is what can tell, for as
 * long as it keeps them (ledgerRetentionDays).
 */
import { DEFAULT_START } from '../core/id.js';
import type { LedgerTop } from '../ports/range-ledger.js';
import type { TagInfo } from '../ports/segment-store.js';

export interface TagNameHistory {
  readonly tag: string;
  /** The tag as it is now; undefined when no tag of this name exists. */
  readonly current: TagInfo | undefined;
  /** False: the store keeps no range ledger (Leaf's or Tinyid's own table), so max_id is all it knows. */
  readonly ledger: boolean;
  /** What the ledger still holds of the name; undefined: no row (no range taken, or all pruned). */
  readonly top: LedgerTop | undefined;
  /** The lowest start that repeats no ID the store knows of: max(max_id, the ledger's top + 1). */
  readonly safeStart: bigint;
}

/** `maxId`: the current (or just deleted) creation's max_id, 0n when there is none. */
export function nameHistory(
  tag: string,
  current: TagInfo | undefined,
  maxId: bigint,
  ledger: boolean,
  top: LedgerTop | undefined,
): TagNameHistory {
  const aboveLedger = top?.last === undefined ? 0n : top.last + 1n;
  return { tag, current, ledger, top, safeStart: aboveLedger > maxId ? aboveLedger : maxId };
}

/** What the ledger can and cannot vouch for, in a sentence that ends the advice. */
function ledgerCaveat(h: TagNameHistory): string {
  if (!h.ledger)
    return 'this store keeps no range ledger (a Leaf or Tinyid table), so it cannot know IDs this name handed out in an earlier creation: if it was ever deleted and created again lower, start above those too';
  const since = h.top === undefined ? undefined : new Date(h.top.oldestAtMs).toISOString();
  return since === undefined
    ? 'the range ledger holds no range of this name (none taken, or pruned after ledgerRetentionDays, default 90): IDs it handed out in an earlier creation cannot be ruled out'
    : `the range ledger's rows of this name go back to ${since}; rows older than ledgerRetentionDays (default 90) are pruned, so IDs handed out before that are not counted`;
}

/** The line `tag delete` prints: `maxId` is the deleted tag's, `h` read after the delete. */
export function deleteAdvice(h: TagNameHistory, maxId: bigint): string {
  // A tail given back counts: the ledger cannot tell whether a later range took it again.
  const seen =
    h.top?.last === undefined ? '' : `; the range ledger records ranges up to ID ${h.top.last} under this name, across its creations`;
  return `deleted ${h.tag} (its max_id was ${maxId}${seen}): to create it again without repeating its IDs, use --start ${h.safeStart} or higher. Note: ${ledgerCaveat(h)}.`;
}

/**
 * Said when a tag is created at `start` (undefined: the default) below IDs
 * the ledger shows were handed out under its name; undefined when nothing is
 * known at or above `start`.
 */
export function belowHistory(h: TagNameHistory, start = DEFAULT_START): string | undefined {
  if (h.top?.last === undefined || start > h.top.last) return undefined;
  return `ranges up to ID ${h.top.last} were taken under the name ${h.tag} before (range ledger); starting at ${start}, IDs from ${start} to ${h.top.last} may be handed out again: servers that served them refuse (STORE_ROLLBACK_DETECTED) until fenced, a new server hands them out. To repeat none, use --start ${h.safeStart} or higher`;
}
