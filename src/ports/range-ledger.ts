/**
 * The range ledger (DESIGN.md invariant 7): every range a segment store hands
 * out or takes back is recorded by the store in the same transaction (or Lua
 * script) that moves max_id, so an ID found in a business table can be traced
 * to the server, time and state that issued it.
 */

/** Who took a range: fixed for the life of a process. */
export interface ServerIdentity {
  readonly host: string;
  readonly pid: number;
  /** Random at process start: tells apart two processes that reused a pid, or two hosts with one name. */
  readonly instance: string;
  readonly version: string;
}

/**
 * `allocate`: a range handed out (a segment load or a strict-tag flush: both
 * are `SegmentStore.allocate`). `give-back`: the unused tail returned at a
 * clean shutdown; its IDs were never issued by the server that gave them back
 * and may be issued again by a later `allocate`. `fence`: the IDs a fence
 * jumped over (from the old max_id to the bound): the operator declared them
 * possibly issued (a store restored from a backup loses its ledger rows with
 * its ranges), so they count as covered, never as foreign.
 */
export type LedgerKind = 'allocate' | 'give-back' | 'fence';

export interface LedgerEntry {
  readonly tag: string;
  readonly kind: LedgerKind;
  /** First and last ID of the range (inclusive). */
  readonly first: bigint;
  readonly last: bigint;
  /** Distance between consecutive IDs (a multi-store set of N stores: N). */
  readonly stride: number;
  /** How many IDs (allocate: the applied step). */
  readonly step: number;
  readonly host: string;
  readonly pid: number;
  readonly instance: string;
  readonly version: string;
  /** The store's clock when the range moved (ms since 1970). */
  readonly atMs: number;
  readonly fenceEpoch: number;
  readonly generation: string;
}

/** One page of a tag's ledger; `next` is the cursor of the following page (undefined: this was the last). */
export interface LedgerPage {
  readonly entries: LedgerEntry[];
  readonly next?: string | undefined;
}

/** How high a tag name's ranges reached, as far as the ledger still knows (see RangeLedger.ledgerTop). */
export interface LedgerTop {
  /**
   * The highest ID an allocation or a fence of the name covers, over every
   * creation of it; undefined when only give-backs are left (they lie inside
   * allocations, so they never raise it).
   */
  readonly last: bigint | undefined;
  /** When the oldest row still kept for the name was written (ms since 1970): older rows were pruned, or never written. */
  readonly oldestAtMs: number;
}

/** What a segment store that keeps a ledger answers (SegmentStore's optional ledger methods). */
export interface RangeLedger {
  /** Entries of `tag` whose range holds `id` (allocations and give-backs), oldest first. */
  rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]>;
  /** Every entry of `tag`, in order of `first`. */
  ledgerEntries(tag: string): Promise<LedgerEntry[]>;
  /**
   * Every entry of `tag` a page at a time (`cursor`: undefined for the first
   * page, then the previous page's `next`), about `limit` entries a page and
   * in no promised order: what `sequoia audit` reads, holding one page at once.
   */
  ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage>;
  /**
   * The top of `tag`'s ranges across deletes and re-creations (undefined: no
   * row of it): where a re-created tag may start without repeating an ID the
   * ledger knows of. Counts give-backs as issued, since the ledger cannot
   * tell whether a later range took those IDs again.
   */
  ledgerTop(tag: string): Promise<LedgerTop | undefined>;
  /** Deletes at most `limit` entries older than `beforeMs`; answers how many it deleted. */
  pruneLedger(beforeMs: number, limit: number): Promise<number>;
}
