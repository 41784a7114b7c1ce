/**
 * The store behind segment mode: one row per tag holding `max_id` (the end of
 * the last handed-out range) and `step` (the minimum step). Every adapter must
 * make `allocate` one atomic operation: `max_id = max_id + step`, then read back.
 */
import type { RangeLedger } from './range-ledger.js';

export interface TagInfo {
  readonly tag: string;
  /** End (exclusive) of the last range handed out; the next range starts here. */
  readonly maxId: bigint;
  /** The stored step: the minimum segment length. */
  readonly step: number;
  readonly description: string;
  readonly updatedAt: Date;
  /** Bumped by every `fence`; see the rollback guard. */
  readonly fenceEpoch: number;
  /**
   * Which creation of the tag this row is: a fresh random 63-bit value (as a
   * decimal string) written by every `createTag`, so a tag deleted and created
   * again is never mistaken for the one before it (its max_id and fence epoch
   * may well repeat; its generation does not). `'0'` marks a tag created
   * before generations existed (or by an older version). Opaque: compare for
   * equality only.
   */
  readonly generation: string;
}

export interface Allocation {
  /** The new max_id: the segment is [maxId - step, maxId). */
  readonly maxId: bigint;
  /** The step applied to this allocation. */
  readonly step: number;
  /** The tag's stored (minimum) step at the time of the allocation. */
  readonly storedStep: number;
  readonly fenceEpoch: number;
  /** The generation of the tag row this range came from (see TagInfo.generation). */
  readonly generation: string;
  /**
   * Distance between consecutive IDs of the segment; default 1. A multi-store
   * set of N stores answers with stride N: the segment's IDs are
   * `maxId - step * stride + k * stride` for 0 <= k < step, i.e. the half-open
   * range [maxId - step * stride, maxId) stepping by `stride`.
   */
  readonly stride?: number | undefined;
  /**
   * Every ID of the segment is ≡ offset (mod stride); default 0. It names the
   * store of a multi-store set that answered (store i hands out IDs ≡ i mod N),
   * so the rollback guard can keep one high-water mark per (tag, stride, offset):
   * each store is monotonic on its own, not against the others.
   */
  readonly offset?: number | undefined;
}

/**
 * What a give-back requires of the row, all three taken from the answer that
 * ended at `maxId`: no one allocated after it (`maxId`), no fence happened
 * since (`fenceEpoch`: a fence bound may lie inside the tail, declared
 * possibly used, and those IDs must not come back), and the row is the same
 * creation of the tag (`generation`: a tag deleted and created again can
 * reach the same max_id and fence epoch, and a give-back into it would hand
 * out IDs the new tag already answered).
 */
export interface GiveBackExpectation {
  readonly maxId: bigint;
  readonly fenceEpoch: number;
  readonly generation: string;
}

export interface NewTag {
  readonly tag: string;
  /** Default 1000. */
  readonly step?: number | undefined;
  /** Where the first ID is; default 1. */
  readonly start?: bigint | undefined;
  readonly description?: string | undefined;
}

export interface TagUpdate {
  readonly step?: number | undefined;
  readonly description?: string | undefined;
}

/**
 * A store that keeps the range ledger (every built-in store but the Leaf-table
 * ones) has the three RangeLedger methods; one without them records nothing.
 */
export interface SegmentStore extends Partial<RangeLedger> {
  /** A short name for logs and status, without credentials. */
  readonly kind: string;
  /**
   * Where the store's data lives, as a state dir is bound to it (a server's
   * `storeIdentity`, e.g. `sqlite:/abs/path.db`): set by stores that know it,
   * so a library's IdService refuses a state dir that belongs to another store.
   */
  readonly location?: string;
  /**
   * The stride of its answers when above 1: a multi-store set of N stores
   * answers stride N. Its IDs come from independent stores, unique but not
   * ordered across them (strict tags need one store); a store that is not a
   * set yet holds the set's meta tag is a member and must not be served alone.
   */
  readonly stride?: number;
  /** Creates or migrates the schema. Idempotent. */
  init(): Promise<void>;
  /**
   * Atomically advances the tag's max_id by `step` (or the stored step) and
   * returns the new value. Throws TAG_NOT_FOUND, ID_SPACE_EXHAUSTED when the
   * range would pass 2^63-1, STORE_UNAVAILABLE when the store cannot be reached.
   */
  allocate(tag: string, step?: number): Promise<Allocation>;
  getTag(tag: string): Promise<TagInfo | undefined>;
  listTags(): Promise<TagInfo[]>;
  /** Throws TAG_EXISTS. */
  createTag(tag: NewTag): Promise<TagInfo>;
  /** Throws TAG_NOT_FOUND. */
  updateTag(tag: string, update: TagUpdate): Promise<TagInfo>;
  /** Throws TAG_NOT_FOUND. */
  deleteTag(tag: string): Promise<void>;
  /**
   * Raises max_id to at least `to` and bumps the fence epoch, accepting the
   * store's state as safe again. Never lowers max_id.
   */
  fence(tag: string, to: bigint): Promise<TagInfo>;
  /**
   * Compare-and-set, for a clean shutdown: gives back the unused tail
   * [from, expect.maxId) of the caller's last range by setting max_id to
   * `from`, only if the row is still as the range left it, and answers
   * whether it did. Never raises max_id (`from` above `expect.maxId`, or
   * below 0, is INVALID_ARGUMENT). A missing tag answers false. Every store
   * implements it; calling it is optional (a server that skips it only
   * leaves a gap). See GiveBackExpectation for what must still hold.
   */
  giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean>;
  /** Resolves when the store answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A store on another system's own table (Leaf's `leaf_alloc`, Tinyid's
 * `tiny_id_info`) that `sequoia migrate` can leave behind for good.
 */
export interface RetiringStore {
  /**
   * Renames the tag's row to `retiredName` under the row's lock, so the other
   * system's next load of the tag finds no row (and fails) instead of taking
   * a range the new store hands out too. `check` sees the row as locked
   * (nothing can move it until the rename commits); throwing there leaves the
   * row as it was. Answers the row as it was locked. TAG_NOT_FOUND when there
   * is none; INVALID_ARGUMENT when the table refuses the new name.
   */
  retireTag(tag: string, retiredName: string, check: (locked: TagInfo) => void): Promise<TagInfo>;
}
