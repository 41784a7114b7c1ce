/**
 * What the stores on Leaf's own table (`leaf_alloc`) share, whatever the
 * backend: the names, the row shape, and the rules where Sequoia and Leaf meet.
 *
 * Leaf's table (scripts/leaf_alloc.sql in Meituan-Dianping/Leaf):
 *   biz_tag varchar(128) PK, max_id bigint NOT NULL DEFAULT 1, step int NOT NULL,
 *   description varchar(256) NULL, update_time timestamp (ON UPDATE CURRENT_TIMESTAMP)
 * Leaf's IDAllocDao allocates with exactly two statements in one transaction:
 *   UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?      (or max_id + #{step})
 *   SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = ?
 * and hands out [max_id - step, max_id), the same half-open range as Sequoia.
 *
 * The Leaf table gains nothing: Sequoia's own per-tag state (fence epoch,
 * generation) lives in a side table keyed by (leaf table name, tag). A tag
 * that Leaf's admins inserted has no side row yet: fence epoch 0, generation
 * LEGACY_GENERATION ('0'); `createTag` writes a fresh generation (newGeneration)
 * and resets the fence epoch, as a new row of Sequoia's own table would.
 */
import type { TagInfo } from '../../ports/segment-store.js';
import { LEGACY_GENERATION } from './segment-rules.js';
import type { ForeignSchema } from './side-table.js';

/** `leaf_table` names the Leaf table in the side table's key, as the first release made it. */
export const LEAF_SCHEMA: ForeignSchema = {
  system: 'Leaf',
  defaultTable: 'leaf_alloc',
  defaultSideTable: 'sequoia_leaf_state',
  keyColumn: 'leaf_table',
  describes: false,
};

/** A leaf_alloc row with the side table's fence epoch joined in; BIGINTs as text. */
export interface LeafRow {
  biz_tag: string;
  max_id: string;
  step: number | string;
  description: string | null;
  update_time: Date | string | null;
  fence_epoch: number | string | null;
  /** From the side table; none (NULL) for a row Leaf's admins inserted: LEGACY_GENERATION. */
  generation: string | number | null;
}

export function tagInfoFromLeafRow(r: LeafRow): TagInfo {
  const t = r.update_time;
  return {
    tag: r.biz_tag,
    maxId: BigInt(r.max_id),
    step: Number(r.step),
    description: r.description ?? '',
    updatedAt: t instanceof Date ? t : t === null ? new Date(0) : new Date(t),
    fenceEpoch: Number(r.fence_epoch ?? 0),
    generation: r.generation === null || r.generation === undefined ? LEGACY_GENERATION : String(r.generation),
  };
}

/** SQLSTATE / errno of "BIGINT value is out of range": `max_id + step` would pass 2^63-1. */
export function isBigintOverflow(e: unknown): boolean {
  const err = e as { code?: unknown; errno?: unknown };
  return err.code === '22003' || err.errno === 1690 || err.code === 'ER_DATA_OUT_OF_RANGE';
}
