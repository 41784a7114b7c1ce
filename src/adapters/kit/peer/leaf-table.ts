/**
 * Leaf's own table (`leaf_alloc`) as the peer store (kit/peer/peer-store.ts) uses
 * it, whatever the backend: the names, the row shape, the statements in each
 * SQL dialect, and the rules where Sequoia and Leaf meet.
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
import { TagNotFoundError } from '../../../core/errors.js';
import type { Allocation, NewTag, TagInfo, TagUpdate } from '../../../ports/segment-store.js';
import type { PeerSchema, PeerStatements, PeerTable } from './peer-store.js';
import { DEFAULT_STEP, exhausted, LEGACY_GENERATION } from '../segment/segment-rules.js';
import type { RunSql, SqlAnswer } from '../sql/sql-database.js';

/** `leaf_table` names the Leaf table in the side table's key, as the first release made it. */
export const LEAF_SCHEMA: PeerSchema = {
  system: 'Leaf',
  defaultTable: 'leaf_alloc',
  defaultSideTable: 'sequoia_leaf_state',
  keyColumn: 'leaf_table',
  tagColumn: 'biz_tag',
  describes: false,
  optimistic: false,
  table: (name, dialect) => new LeafTable(dialect === 'mysql' ? mysqlLeaf(name) : postgresLeaf(name)),
};

/** A leaf_alloc row with the side table's fence epoch joined in; BIGINTs as text. */
interface LeafRow {
  biz_tag: string;
  max_id: string;
  step: number | string;
  description: string | null;
  update_time: Date | string | null;
  fence_epoch: number | string | null;
  /** From the side table; none (NULL) for a row Leaf's admins inserted: LEGACY_GENERATION. */
  generation: string | number | null;
}

function tagInfoFromLeafRow(r: LeafRow): TagInfo {
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
function isBigintOverflow(e: unknown): boolean {
  const err = e as { code?: unknown; errno?: unknown };
  return err.code === '22003' || err.errno === 1690 || err.code === 'ER_DATA_OUT_OF_RANGE';
}

interface LeafStatements extends PeerStatements {
  /** Leaf's allocation with the row's own step. Values: [tag]. */
  readonly allocateStored: string;
  /** Leaf's allocation with a dynamic step. Values: [step, tag]. */
  readonly allocateBy: string;
  /** The row after the allocation, as Leaf reads it back. Values: [tag]. */
  readonly readAfter: string;
}

/**
 * Leaf's statements in MySQL. Leaf's table gets `update_time` from its ON
 * UPDATE clause; MySQL refuses a BIGINT past 2^63-1 (error 1690).
 */
function mysqlLeaf(t: string): LeafStatements {
  return {
    columns: 'f.biz_tag, f.max_id, f.step, f.description, f.update_time',
    allocateStored: `UPDATE ${t} SET max_id = max_id + step WHERE biz_tag = ?`,
    allocateBy: `UPDATE ${t} SET max_id = max_id + ? WHERE biz_tag = ?`,
    readAfter: `SELECT biz_tag, max_id, step FROM ${t} WHERE biz_tag = ?`,
    insert: `INSERT INTO ${t} (biz_tag, max_id, step, description) VALUES (?, CAST(? AS SIGNED), ?, ?)`,
    update: `UPDATE ${t} SET step = COALESCE(?, step), description = COALESCE(?, description) WHERE biz_tag = ?`,
    remove: `DELETE FROM ${t} WHERE biz_tag = ?`,
    fence: `UPDATE ${t} SET max_id = GREATEST(max_id, CAST(? AS SIGNED)) WHERE biz_tag = ?`,
    lock: `SELECT max_id FROM ${t} WHERE biz_tag = ? FOR UPDATE`,
    set: `UPDATE ${t} SET max_id = CAST(? AS SIGNED) WHERE biz_tag = ?`,
    retire: `UPDATE ${t} SET biz_tag = ? WHERE biz_tag = ?`,
  };
}

/**
 * Leaf's statements in PostgreSQL (BIGINTs read as text). PostgreSQL has no
 * ON UPDATE clause: an update sets `update_time`; it refuses a BIGINT past
 * 2^63-1 (SQLSTATE 22003).
 */
function postgresLeaf(t: string): LeafStatements {
  return {
    columns: 'f.biz_tag, f.max_id::text AS max_id, f.step, f.description, f.update_time',
    allocateStored: `UPDATE ${t} SET max_id = max_id + step WHERE biz_tag = $1`,
    allocateBy: `UPDATE ${t} SET max_id = max_id + $1 WHERE biz_tag = $2`,
    readAfter: `SELECT biz_tag, max_id::text AS max_id, step FROM ${t} WHERE biz_tag = $1`,
    insert: `INSERT INTO ${t} (biz_tag, max_id, step, description) VALUES ($1, $2::bigint, $3, $4)`,
    update: `UPDATE ${t} SET step = COALESCE($1::integer, step), description = COALESCE($2::text, description), update_time = CURRENT_TIMESTAMP
       WHERE biz_tag = $3`,
    remove: `DELETE FROM ${t} WHERE biz_tag = $1`,
    fence: `UPDATE ${t} SET max_id = GREATEST(max_id, $1::bigint) WHERE biz_tag = $2`,
    lock: `SELECT max_id::text AS max_id FROM ${t} WHERE biz_tag = $1 FOR UPDATE`,
    set: `UPDATE ${t} SET max_id = $1::bigint WHERE biz_tag = $2`,
    retire: `UPDATE ${t} SET biz_tag = $1, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $2`,
  };
}

/** Leaf's table in one dialect: max_id is where the next range starts, as in Sequoia's own table. */
class LeafTable implements PeerTable {
  constructor(readonly sql: LeafStatements) {}

  /** Leaf's IDAllocDao, statement for statement; the UPDATE's row lock serialises every allocator, Leaf's and Sequoia's. */
  async allocate(run: RunSql, tag: string, step: number | undefined): Promise<Omit<Allocation, 'fenceEpoch' | 'generation'>> {
    let upd: SqlAnswer;
    try {
      upd = step === undefined ? await run(this.sql.allocateStored, [tag]) : await run(this.sql.allocateBy, [step, tag]);
    } catch (e) {
      // Leaf's statement has no overflow check: the database's refusal is the exhausted space.
      if (isBigintOverflow(e)) throw exhausted(tag);
      throw e;
    }
    if (upd.count !== 1) throw new TagNotFoundError(tag);
    const row = (await run(this.sql.readAfter, [tag])).rows[0] as Pick<LeafRow, 'max_id' | 'step'> | undefined;
    if (!row) throw new TagNotFoundError(tag);
    const storedStep = Number(row.step);
    return { maxId: BigInt(String(row.max_id)), step: step ?? storedStep, storedStep };
  }

  insertValues(t: NewTag, start: bigint): unknown[] {
    return [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? ''];
  }

  updateValues(tag: string, update: TagUpdate): unknown[] {
    return [update.step ?? null, update.description ?? null, tag];
  }

  maxIdFor(end: bigint): bigint {
    return end;
  }

  endOf(row: unknown): bigint {
    return BigInt(String((row as Pick<LeafRow, 'max_id'>).max_id));
  }

  tagInfo(row: unknown): TagInfo {
    return tagInfoFromLeafRow(row as LeafRow);
  }
}
