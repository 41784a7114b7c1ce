/**
 * Rules every segment store applies the same way: what a new tag starts
 * with, when a range would pass 2^63-1, what a give-back may do, how a
 * written tag is read back, and which table names the SQL stores accept.
 */
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, TagNotFoundError, UnavailableError } from '../../../core/errors.js';
import { MAX_ID } from '../../../core/id.js';
import type { GiveBackExpectation, SegmentStore, TagInfo } from '../../../ports/segment-store.js';

export const DEFAULT_STEP = 1000;
export { DEFAULT_START } from '../../../core/id.js';

/** SQL table names: letters, digits, underscores; no quoting needed on any backend. */
export const TABLE_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;
export const DEFAULT_TABLE = 'sequoia_alloc';

/** Throws unless `table` is a legal table name (the error names the `store` field). */
export function tableName(table: string | undefined): string {
  const t = table ?? DEFAULT_TABLE;
  if (!TABLE_NAME_PATTERN.test(t)) throw new InvalidArgumentError(`store: table must match ${TABLE_NAME_PATTERN.source}`);
  return t;
}

export function exhausted(tag: string): UnavailableError {
  return new UnavailableError('ID_SPACE_EXHAUSTED', `tag ${JSON.stringify(tag)} would pass 2^63-1; it never wraps`);
}

/** Throws unless `value` (a new tag's `start`, a fence's `to`) is an ID a store can hold. */
export function assertStoredId(field: 'start' | 'to', value: bigint): void {
  if (value < 0n || value > MAX_ID) throw new InvalidArgumentError(`${field} must be from 0 to 2^63-1`);
}

/** Throws unless `from` is a legal give-back start for the expected max_id (0 <= from <= maxId). */
export function assertGiveBack(from: bigint, expect: GiveBackExpectation): void {
  if (from < 0n || from > expect.maxId) {
    throw new InvalidArgumentError('giveBack: from must be from 0 to the expected max_id (a give-back never raises max_id)');
  }
}

/** A give-back's compare-and-set, for the stores that read the row first: it is still as the range left it. */
export function stillAsExpected(row: { maxId: bigint; fenceEpoch: number; generation: string }, expect: GiveBackExpectation): boolean {
  return row.maxId === expect.maxId && row.fenceEpoch === expect.fenceEpoch && row.generation === expect.generation;
}

/** A tag just written, read back; one deleted in between is TAG_NOT_FOUND. */
export async function readBack(store: Pick<SegmentStore, 'getTag'>, tag: string): Promise<TagInfo> {
  const info = await store.getTag(tag);
  if (!info) throw new TagNotFoundError(tag);
  return info;
}

/** The generation of rows created before generations existed (the column's default). */
export const LEGACY_GENERATION = '0';

/**
 * A new tag generation: 63 random bits, never 0, as a decimal string (it fits
 * a signed BIGINT on every backend). Random rather than a counter: a counter
 * lives in the store and goes back with it when the store is restored from a
 * backup (the next creation would then reuse a generation handed out after
 * the backup); 63 random bits repeat with odds of about g²/2^64 for g
 * creations of one tag, i.e. never in practice. Made here, not in SQL or Lua,
 * so every backend gets the same kind of value (Redis scripts have no usable
 * randomness).
 */
export function newGeneration(): string {
  for (;;) {
    const g = randomBytes(8).readBigUInt64BE() >> 1n;
    if (g !== 0n) return g.toString();
  }
}
