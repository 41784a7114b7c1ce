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
import type { PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { InvalidArgumentError, type SequoiaError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { isBigintOverflow, type LeafRow, type LeafTableOptions, leafTableNames, tagInfoFromLeafRow } from '../kit/leaf-table.js';
import {
  assertGiveBack,
  assertStoredId,
  DEFAULT_START,
  DEFAULT_STEP,
  exhausted,
  LEGACY_GENERATION,
  newGeneration,
} from '../kit/segment-rules.js';
import { positiveSetting, storeError } from '../kit/store-boundary.js';
import { MysqlConnection, type MysqlConnectionOptions } from './mysql-connection.js';

export interface MysqlLeafSegmentStoreOptions extends Partial<MysqlConnectionOptions>, LeafTableOptions {
  /** A connection shared with the lease store; `uri` and the pool options are then ignored. */
  readonly connection?: MysqlConnection;
  /** Per-query timeout, ms. Default 5000. */
  readonly queryTimeoutMs?: number;
}

export class MysqlLeafSegmentStore implements SegmentStore {
  readonly kind = 'mysql-leaf';
  readonly table: string;
  readonly sideTable: string;
  private readonly connection: MysqlConnection;
  private readonly timeout: number;
  private initialised = false;
  private closed = false;

  constructor(options: MysqlLeafSegmentStoreOptions) {
    const names = leafTableNames(options);
    this.table = names.table;
    this.sideTable = names.side;
    this.timeout = positiveSetting(options.queryTimeoutMs ?? 5000, 'queryTimeoutMs');
    if (options.connection) this.connection = options.connection.retain();
    else if (options.uri) this.connection = new MysqlConnection({ ...options, uri: options.uri }).retain();
    else throw new InvalidArgumentError('store: a MySQL URI or connection is required');
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.withConnection(async (c) => {
      const [found] = await c.query<RowDataPacket[]>(
        { sql: 'SELECT 1 AS one FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?', timeout: this.timeout },
        [this.table],
      );
      if (found.length === 0) {
        throw new UnavailableError(
          'STORE_UNAVAILABLE',
          `MySQL Leaf store: table ${this.table} not found; create it with Leaf's scripts/leaf_alloc.sql (see docs/migrate.md) or fix ?table=`,
        );
      }
      // CREATE TABLE IF NOT EXISTS is atomic in InnoDB's data dictionary: concurrent starts are safe.
      await this.run(
        c,
        `CREATE TABLE IF NOT EXISTS ${this.sideTable} (
          leaf_table VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
          tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
          fence_epoch INT NOT NULL DEFAULT 0,
          generation BIGINT NOT NULL DEFAULT 0,
          PRIMARY KEY (leaf_table, tag)
        ) ENGINE=InnoDB`,
      );
    });
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.tx(async (c) => {
      let upd: ResultSetHeader;
      try {
        upd = (
          step === undefined
            ? await this.run(c, `UPDATE ${this.table} SET max_id = max_id + step WHERE biz_tag = ?`, [tag])
            : await this.run(c, `UPDATE ${this.table} SET max_id = max_id + ? WHERE biz_tag = ?`, [step, tag])
        ) as ResultSetHeader;
      } catch (e) {
        if (isBigintOverflow(e)) throw exhausted(tag);
        throw e;
      }
      if (upd.affectedRows !== 1) throw new TagNotFoundError(tag);
      const [rows] = await c.query<RowDataPacket[]>(
        { sql: `SELECT biz_tag, max_id, step FROM ${this.table} WHERE biz_tag = ?`, timeout: this.timeout },
        [tag],
      );
      const row = rows[0];
      if (!row) throw new TagNotFoundError(tag);
      const storedStep = Number(row.step);
      const { fenceEpoch, generation } = await this.sideOf(c, tag, false);
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
    await this.tx(async (c) => {
      try {
        await this.run(c, `INSERT INTO ${this.table} (biz_tag, max_id, step, description) VALUES (?, CAST(? AS SIGNED), ?, ?)`, [
          t.tag,
          start.toString(),
          t.step ?? DEFAULT_STEP,
          t.description ?? '',
        ]);
      } catch (e) {
        if ((e as { code?: string }).code === 'ER_DUP_ENTRY') throw new TagExistsError(t.tag);
        throw e;
      }
      await this.run(
        c,
        `INSERT INTO ${this.sideTable} (leaf_table, tag, fence_epoch, generation) VALUES (?, ?, 0, CAST(? AS SIGNED))
         ON DUPLICATE KEY UPDATE fence_epoch = 0, generation = VALUES(generation)`,
        [this.table, t.tag, newGeneration()],
      );
    });
    return this.mustGet(t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const r = await this.exec(
      `UPDATE ${this.table} SET step = COALESCE(?, step), description = COALESCE(?, description) WHERE biz_tag = ?`,
      [update.step ?? null, update.description ?? null, tag],
    );
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
    return this.mustGet(tag);
  }

  /**
   * Deletes the Leaf row, as a Leaf admin would, and gives the side row a new
   * generation (its fence epoch stays): a row Leaf's admins insert again must
   * not pass for the deleted one in a give-back.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.tx(async (c) => {
      const r = (await this.run(c, `DELETE FROM ${this.table} WHERE biz_tag = ?`, [tag])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.run(
        c,
        `INSERT INTO ${this.sideTable} (leaf_table, tag, fence_epoch, generation) VALUES (?, ?, 0, CAST(? AS SIGNED))
         ON DUPLICATE KEY UPDATE generation = VALUES(generation)`,
        [this.table, tag, newGeneration()],
      );
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    await this.tx(async (c) => {
      const r = (await this.run(c, `UPDATE ${this.table} SET max_id = GREATEST(max_id, CAST(? AS SIGNED)) WHERE biz_tag = ?`, [
        to.toString(),
        tag,
      ])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.run(
        c,
        `INSERT INTO ${this.sideTable} (leaf_table, tag, fence_epoch, generation) VALUES (?, ?, 1, 0)
         ON DUPLICATE KEY UPDATE fence_epoch = fence_epoch + 1`,
        [this.table, tag],
      );
    });
    return this.mustGet(tag);
  }

  async giveBack(
    tag: string,
    expectedMaxId: bigint,
    newMaxId: bigint,
    expectedFenceEpoch?: number,
    expectedGeneration?: string,
  ): Promise<boolean> {
    assertGiveBack(expectedMaxId, newMaxId);
    return this.tx(async (c) => {
      // The Leaf row's lock first (every allocator and every fence takes it), then the side row (a locking read sees the latest commit).
      const [rows] = await c.query<RowDataPacket[]>(
        { sql: `SELECT max_id FROM ${this.table} WHERE biz_tag = ? FOR UPDATE`, timeout: this.timeout },
        [tag],
      );
      const row = rows[0];
      if (!row || BigInt(String(row.max_id)) !== expectedMaxId) return false;
      const side = await this.sideOf(c, tag, true);
      if (expectedFenceEpoch !== undefined && side.fenceEpoch !== expectedFenceEpoch) return false;
      if (expectedGeneration !== undefined && side.generation !== expectedGeneration) return false;
      await this.run(c, `UPDATE ${this.table} SET max_id = CAST(? AS SIGNED) WHERE biz_tag = ?`, [newMaxId.toString(), tag]);
      return true;
    });
  }

  async ping(): Promise<void> {
    await this.select('SELECT 1 AS one');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection.release();
  }

  /** The side row's fence epoch and generation (0 and LEGACY_GENERATION when Leaf's admins made the tag). */
  private async sideOf(c: PoolConnection, tag: string, locking: boolean): Promise<{ fenceEpoch: number; generation: string }> {
    const [rows] = await c.query<RowDataPacket[]>(
      {
        sql: `SELECT fence_epoch, generation FROM ${this.sideTable} WHERE leaf_table = ? AND tag = ?${locking ? ' FOR UPDATE' : ''}`,
        timeout: this.timeout,
      },
      [this.table, tag],
    );
    const row = rows[0];
    return { fenceEpoch: Number(row?.fence_epoch ?? 0), generation: row ? String(row.generation) : LEGACY_GENERATION };
  }

  private selectJoined(): string {
    return `SELECT l.biz_tag, l.max_id, l.step, l.description, l.update_time, s.fence_epoch, s.generation
      FROM ${this.table} l LEFT JOIN ${this.sideTable} s
        ON s.leaf_table = ? AND s.tag = CONVERT(l.biz_tag USING utf8mb4) COLLATE utf8mb4_bin`;
  }

  private async mustGet(tag: string): Promise<TagInfo> {
    const info = await this.getTag(tag);
    if (!info) throw new TagNotFoundError(tag);
    return info;
  }

  private async select(sql: string, values?: unknown[]): Promise<(LeafRow & RowDataPacket)[]> {
    try {
      const [rows] = await this.connection.pool.query<(LeafRow & RowDataPacket)[]>({ sql, values, timeout: this.timeout });
      return rows;
    } catch (e) {
      throw this.wrap(e);
    }
  }

  private async exec(sql: string, values?: unknown[]): Promise<ResultSetHeader> {
    try {
      const [r] = await this.connection.pool.query<ResultSetHeader>({ sql, values, timeout: this.timeout });
      return r;
    } catch (e) {
      throw this.wrap(e);
    }
  }

  private async run(c: PoolConnection, sql: string, values?: unknown[]): Promise<unknown> {
    const [r] = await c.query({ sql, values, timeout: this.timeout });
    return r;
  }

  /** One transaction on one connection; rolled back on any failure. */
  private tx<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.withConnection(async (c) => {
      await this.run(c, 'START TRANSACTION');
      try {
        const r = await fn(c);
        await this.run(c, 'COMMIT');
        return r;
      } catch (e) {
        await c.query('ROLLBACK').catch(() => {});
        throw e;
      }
    });
  }

  private wrap(e: unknown): SequoiaError {
    return storeError(BACKEND, e, this.connection.target);
  }

  private withConnection<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.connection.withConnection(BACKEND, fn);
  }
}

const BACKEND = 'MySQL Leaf store';
