/**
 * SegmentStore on Leaf's own table (`leaf_alloc`, name configurable) in
 * MySQL/MariaDB, so Leaf servers and Sequoia servers draw from one row
 * without overlap. An allocation is Leaf's IDAllocDao, statement for
 * statement, in one transaction on one connection:
 *
 *   START TRANSACTION
 *   UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?       -- or max_id + ? (dynamic step)
 *   SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = ?
 *   SELECT fence_epoch FROM sequoia_leaf_state WHERE leaf_table = ? AND tag = ?   -- Sequoia's side table
 *   COMMIT
 *
 * InnoDB's row lock, taken by the UPDATE and held to COMMIT, serialises Leaf's
 * allocators and Sequoia's. Leaf's statement has no overflow check; MySQL
 * refuses a BIGINT past 2^63-1 (error 1690), answered as ID_SPACE_EXHAUSTED.
 *
 * The Leaf table gains no column: the fence epoch and the tag's generation
 * live in the side table. `init` creates the side table only; the Leaf table
 * must exist. Tags compare as the Leaf table's collation says (Leaf's script
 * leaves it to the server default, usually case-insensitive; see docs/migrate.md).
 */
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { TagExistsError, TagNotFoundError } from '../../core/errors.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { isBigintOverflow, type LeafRow, LEAF_SCHEMA, tagInfoFromLeafRow } from '../kit/leaf-table.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, readBack, sameSinceRange } from '../kit/segment-rules.js';
import { type ForeignTableOptions, SideTable } from '../kit/side-table.js';
import { MysqlStatements, type MysqlStoreOptions } from './mysql-connection.js';

export interface MysqlLeafSegmentStoreOptions extends MysqlStoreOptions, ForeignTableOptions {}

export class MysqlLeafSegmentStore implements SegmentStore {
  readonly kind = 'mysql-leaf';
  readonly table: string;
  private readonly db: MysqlStatements;
  private readonly side: SideTable;
  private initialised = false;
  private closed = false;

  constructor(options: MysqlLeafSegmentStoreOptions) {
    this.side = new SideTable(LEAF_SCHEMA, options, 'mysql');
    this.table = this.side.foreign;
    this.db = new MysqlStatements(options, BACKEND);
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.db.withConnection((c) =>
      this.side.ensure(
        this.db.runner(c),
        `MySQL Leaf store: table ${this.table} not found; create it with Leaf's scripts/leaf_alloc.sql (see docs/migrate.md) or fix ?table=`,
      ),
    );
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.db.transaction(async (c) => {
      let upd: ResultSetHeader;
      try {
        upd = (
          step === undefined
            ? await this.db.run(c, `UPDATE ${this.table} SET max_id = max_id + step WHERE biz_tag = ?`, [tag])
            : await this.db.run(c, `UPDATE ${this.table} SET max_id = max_id + ? WHERE biz_tag = ?`, [step, tag])
        ) as ResultSetHeader;
      } catch (e) {
        if (isBigintOverflow(e)) throw exhausted(tag);
        throw e;
      }
      if (upd.affectedRows !== 1) throw new TagNotFoundError(tag);
      const [row] = await this.db.rows(c, `SELECT biz_tag, max_id, step FROM ${this.table} WHERE biz_tag = ?`, [tag]);
      if (!row) throw new TagNotFoundError(tag);
      const storedStep = Number(row.step);
      const { fenceEpoch, generation } = await this.side.read(this.db.runner(c), tag);
      return { maxId: BigInt(String(row.max_id)), step: step ?? storedStep, storedStep, fenceEpoch, generation };
    });
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const rows = await this.select(`${this.selectJoined()} WHERE l.biz_tag = ?`, [this.table, tag]);
    return rows[0] ? tagInfoFromLeafRow(rows[0]) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const rows = await this.select(`${this.selectJoined()} ORDER BY CONVERT(l.biz_tag USING utf8mb4) COLLATE utf8mb4_bin`, [this.table]);
    return rows.map(tagInfoFromLeafRow);
  }

  /** As Leaf's admins do: `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (…)`; the side row gets a new generation. */
  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    await this.db.transaction(async (c) => {
      try {
        await this.db.run(c, `INSERT INTO ${this.table} (biz_tag, max_id, step, description) VALUES (?, CAST(? AS SIGNED), ?, ?)`, [
          t.tag,
          start.toString(),
          t.step ?? DEFAULT_STEP,
          t.description ?? '',
        ]);
      } catch (e) {
        if ((e as { code?: string }).code === 'ER_DUP_ENTRY') throw new TagExistsError(t.tag);
        throw e;
      }
      await this.side.created(this.db.runner(c), t.tag);
    });
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const r = await this.db.exec(
      `UPDATE ${this.table} SET step = COALESCE(?, step), description = COALESCE(?, description) WHERE biz_tag = ?`,
      [update.step ?? null, update.description ?? null, tag],
    );
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  /**
   * Deletes the Leaf row, as a Leaf admin would, and gives the side row a new
   * generation (its fence epoch stays): a row Leaf's admins insert again must
   * not pass for the deleted one in a give-back.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.db.transaction(async (c) => {
      const r = (await this.db.run(c, `DELETE FROM ${this.table} WHERE biz_tag = ?`, [tag])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.side.deleted(this.db.runner(c), tag);
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    await this.db.transaction(async (c) => {
      const r = (await this.db.run(c, `UPDATE ${this.table} SET max_id = GREATEST(max_id, CAST(? AS SIGNED)) WHERE biz_tag = ?`, [
        to.toString(),
        tag,
      ])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.side.fenced(this.db.runner(c), tag);
    });
    return readBack(this, tag);
  }

  async giveBack(
    tag: string,
    expectedMaxId: bigint,
    newMaxId: bigint,
    expectedFenceEpoch?: number,
    expectedGeneration?: string,
  ): Promise<boolean> {
    assertGiveBack(expectedMaxId, newMaxId);
    return this.db.transaction(async (c) => {
      // The Leaf row's lock first (every allocator and every fence takes it), then the side row.
      const [row] = await this.db.rows(c, `SELECT max_id FROM ${this.table} WHERE biz_tag = ? FOR UPDATE`, [tag]);
      if (!row || BigInt(String(row.max_id)) !== expectedMaxId) return false;
      if (!sameSinceRange(await this.side.read(this.db.runner(c), tag, true), expectedFenceEpoch, expectedGeneration)) return false;
      await this.db.run(c, `UPDATE ${this.table} SET max_id = CAST(? AS SIGNED) WHERE biz_tag = ?`, [newMaxId.toString(), tag]);
      return true;
    });
  }

  async ping(): Promise<void> {
    await this.db.select('SELECT 1 AS one');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.release();
  }

  private selectJoined(): string {
    return this.side.joined('l.biz_tag, l.max_id, l.step, l.description, l.update_time', 'l', 'biz_tag');
  }

  private select(sql: string, values: unknown[]): Promise<(LeafRow & RowDataPacket)[]> {
    return this.db.select<LeafRow & RowDataPacket>(sql, values);
  }
}

const BACKEND = 'MySQL Leaf store';
