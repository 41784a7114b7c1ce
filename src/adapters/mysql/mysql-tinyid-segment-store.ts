/**
 * SegmentStore on Tinyid's own table (`tiny_id_info`, name configurable) in
 * MySQL/MariaDB, so Tinyid servers and Sequoia servers draw from one row
 * without overlap. An allocation is Tinyid's DbSegmentIdServiceImpl and
 * TinyIdInfoDAOImpl, statement for statement: in one READ COMMITTED
 * transaction (Tinyid's @Transactional isolation; under REPEATABLE READ a
 * retry would re-read its own stale snapshot and never win), read the row,
 * then the optimistic update, retried while another allocator won the race:
 *
 *   select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version
 *     from tiny_id_info where biz_type = ?
 *   update tiny_id_info set max_id= ?, update_time=now(), version=version+1
 *     where id=? and max_id=? and version=? and biz_type=?
 *
 * The segment's IDs keep Tinyid's rule (id % delta == remainder): see
 * kit/tinyid-table.ts. Every write of Sequoia's that moves max_id (fence,
 * give-back) also bumps `version`. Tinyid's table gains nothing: the fence
 * epoch, the generation and the description live in the side table. `init`
 * creates the side table only; Tinyid's table must exist.
 */
import type { PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { InvalidArgumentError, type SequoiaError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import { MAX_ID } from '../../core/id.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, DEFAULT_START, DEFAULT_STEP, exhausted, LEGACY_GENERATION, newGeneration } from '../kit/segment-rules.js';
import { positiveSetting, storeError } from '../kit/store-boundary.js';
import {
  allocationOf,
  endAfter,
  maxIdBelow,
  nextMaxId,
  PerTagQueue,
  raceBackoff,
  residueOf,
  TINYID_RETRIES,
  type TinyidRow,
  type TinyidTableOptions,
  tagInfoFromTinyidRow,
  tinyidTableNames,
} from '../kit/tinyid-table.js';
import { MysqlConnection, type MysqlConnectionOptions } from './mysql-connection.js';

export interface MysqlTinyidSegmentStoreOptions extends Partial<MysqlConnectionOptions>, TinyidTableOptions {
  /** A connection shared with the lease store; `uri` and the pool options are then ignored. */
  readonly connection?: MysqlConnection;
  /** Per-query timeout, ms. Default 5000. */
  readonly queryTimeoutMs?: number;
}

export class MysqlTinyidSegmentStore implements SegmentStore {
  readonly kind = 'mysql-tinyid';
  readonly table: string;
  readonly sideTable: string;
  private readonly connection: MysqlConnection;
  private readonly timeout: number;
  private readonly queue = new PerTagQueue();
  private initialised = false;
  private closed = false;

  constructor(options: MysqlTinyidSegmentStoreOptions) {
    const names = tinyidTableNames(options);
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
          `MySQL Tinyid store: table ${this.table} not found; create it with Tinyid's tinyid-server/db.sql (see docs/migrate.md) or fix ?table=`,
        );
      }
      await this.run(
        c,
        `CREATE TABLE IF NOT EXISTS ${this.sideTable} (
          source_table VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
          tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
          fence_epoch INT NOT NULL DEFAULT 0,
          generation BIGINT NOT NULL DEFAULT 0,
          description VARCHAR(1024) CHARACTER SET utf8mb4 NOT NULL DEFAULT '',
          PRIMARY KEY (source_table, tag)
        ) ENGINE=InnoDB`,
      );
    });
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.queue.run(tag, () => this.allocateNow(tag, step));
  }

  private allocateNow(tag: string, step: number | undefined): Promise<Allocation> {
    return this.tx(async (c) => {
      for (let i = 0; i < TINYID_RETRIES; i++) {
        const [rows] = await c.query<RowDataPacket[]>(
          {
            sql: `select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version from ${this.table} where biz_type = ?`,
            timeout: this.timeout,
          },
          [tag],
        );
        const row = rows[0] as (TinyidRow & RowDataPacket) | undefined;
        if (!row) throw new TagNotFoundError(tag);
        const residue = residueOf(row);
        const b = BigInt(String(row.max_id));
        const next = nextMaxId(b, row, residue, step);
        if (next === undefined) throw exhausted(tag);
        const upd = (await this.run(
          c,
          `update ${this.table} set max_id = CAST(? AS SIGNED), update_time = now(), version = version + 1
           where id = ? and max_id = CAST(? AS SIGNED) and version = CAST(? AS SIGNED) and biz_type = ?`,
          [next.toString(), String(row.id), String(row.max_id), String(row.version), row.biz_type],
        )) as ResultSetHeader;
        if (upd.affectedRows === 1) return allocationOf(b, next, row, residue, await this.sideOf(c, tag, false));
        await raceBackoff(i);
      }
      throw new UnavailableError(
        'STORE_UNAVAILABLE',
        `tag ${JSON.stringify(tag)}: lost the race for the Tinyid row ${TINYID_RETRIES} times`,
        {
          retryAfterMs: 100,
        },
      );
    }, true);
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const rows = await this.select(`${this.selectJoined()} WHERE t.biz_type = ?`, [this.table, tag]);
    return rows[0] ? tagInfoFromTinyidRow(rows[0]) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const rows = await this.select(`${this.selectJoined()} ORDER BY CONVERT(t.biz_type USING utf8mb4) COLLATE utf8mb4_bin`, [this.table]);
    return rows.map(tagInfoFromTinyidRow);
  }

  /** A row as Tinyid's db.sql makes one (begin_id = max_id, delta 1, remainder 0); the side row gets a new generation. */
  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    if (start < 0n || start > MAX_ID) throw new InvalidArgumentError('start must be from 0 to 2^63-1');
    const b = maxIdBelow(start).toString();
    await this.tx(async (c) => {
      try {
        await this.run(
          c,
          `INSERT INTO ${this.table} (biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version)
           VALUES (?, CAST(? AS SIGNED), CAST(? AS SIGNED), ?, 1, 0, now(), now(), 0)`,
          [t.tag, b, b, t.step ?? DEFAULT_STEP],
        );
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === 'ER_DUP_ENTRY') throw new TagExistsError(t.tag);
        if (code === 'ER_DATA_TOO_LONG') throw new InvalidArgumentError(`tag: longer than ${this.table}.biz_type allows`);
        throw e;
      }
      await this.run(
        c,
        `INSERT INTO ${this.sideTable} (source_table, tag, fence_epoch, generation, description) VALUES (?, ?, 0, CAST(? AS SIGNED), ?)
         ON DUPLICATE KEY UPDATE fence_epoch = 0, generation = VALUES(generation), description = VALUES(description)`,
        [this.table, t.tag, newGeneration(), t.description ?? ''],
      );
    });
    return this.mustGet(t.tag);
  }

  /** The step counts IDs, as everywhere in Sequoia: Tinyid's row gets `step * delta`. */
  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    await this.tx(async (c) => {
      const r = (await this.run(c, `UPDATE ${this.table} SET step = COALESCE(? * delta, step), update_time = now() WHERE biz_type = ?`, [
        update.step ?? null,
        tag,
      ])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      if (update.description !== undefined) {
        await this.run(
          c,
          `INSERT INTO ${this.sideTable} (source_table, tag, description) VALUES (?, ?, ?)
           ON DUPLICATE KEY UPDATE description = VALUES(description)`,
          [this.table, tag, update.description],
        );
      }
    });
    return this.mustGet(tag);
  }

  /**
   * Deletes the Tinyid row, as a Tinyid admin would, and gives the side row a
   * new generation (its fence epoch and description stay): a row Tinyid's
   * admins insert again must not pass for the deleted one in a give-back.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.tx(async (c) => {
      const r = (await this.run(c, `DELETE FROM ${this.table} WHERE biz_type = ?`, [tag])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.run(
        c,
        `INSERT INTO ${this.sideTable} (source_table, tag, fence_epoch, generation) VALUES (?, ?, 0, CAST(? AS SIGNED))
         ON DUPLICATE KEY UPDATE generation = VALUES(generation)`,
        [this.table, tag, newGeneration()],
      );
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    if (to < 0n || to > MAX_ID) throw new InvalidArgumentError('to must be from 0 to 2^63-1');
    await this.tx(async (c) => {
      const r = (await this.run(
        c,
        `UPDATE ${this.table} SET max_id = GREATEST(max_id, CAST(? AS SIGNED)), update_time = now(), version = version + 1 WHERE biz_type = ?`,
        [maxIdBelow(to).toString(), tag],
      )) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.run(
        c,
        `INSERT INTO ${this.sideTable} (source_table, tag, fence_epoch, generation) VALUES (?, ?, 1, 0)
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
      const [rows] = await c.query<RowDataPacket[]>(
        {
          sql: `SELECT id, biz_type, max_id, step, delta, remainder, version FROM ${this.table} WHERE biz_type = ? FOR UPDATE`,
          timeout: this.timeout,
        },
        [tag],
      );
      const row = rows[0] as (TinyidRow & RowDataPacket) | undefined;
      if (!row || endAfter(BigInt(String(row.max_id)), residueOf(row)) !== expectedMaxId) return false;
      const side = await this.sideOf(c, tag, true);
      if (expectedFenceEpoch !== undefined && side.fenceEpoch !== expectedFenceEpoch) return false;
      if (expectedGeneration !== undefined && side.generation !== expectedGeneration) return false;
      if (newMaxId === expectedMaxId) return true;
      await this.run(
        c,
        `UPDATE ${this.table} SET max_id = CAST(? AS SIGNED), update_time = now(), version = version + 1 WHERE biz_type = ?`,
        [maxIdBelow(newMaxId).toString(), tag],
      );
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

  private async sideOf(c: PoolConnection, tag: string, locking: boolean): Promise<{ fenceEpoch: number; generation: string }> {
    const [rows] = await c.query<RowDataPacket[]>(
      {
        sql: `SELECT fence_epoch, generation FROM ${this.sideTable} WHERE source_table = ? AND tag = ?${locking ? ' FOR UPDATE' : ''}`,
        timeout: this.timeout,
      },
      [this.table, tag],
    );
    const row = rows[0];
    return { fenceEpoch: Number(row?.fence_epoch ?? 0), generation: row ? String(row.generation) : LEGACY_GENERATION };
  }

  private selectJoined(): string {
    return `SELECT t.id, t.biz_type, t.max_id, t.step, t.delta, t.remainder, t.version, t.update_time, s.fence_epoch, s.generation, s.description
      FROM ${this.table} t LEFT JOIN ${this.sideTable} s
        ON s.source_table = ? AND s.tag = CONVERT(t.biz_type USING utf8mb4) COLLATE utf8mb4_bin`;
  }

  private async mustGet(tag: string): Promise<TagInfo> {
    const info = await this.getTag(tag);
    if (!info) throw new TagNotFoundError(tag);
    return info;
  }

  private async select(sql: string, values?: unknown[]): Promise<(TinyidRow & RowDataPacket)[]> {
    try {
      const [rows] = await this.connection.pool.query<(TinyidRow & RowDataPacket)[]>({ sql, values, timeout: this.timeout });
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

  /** One transaction on one connection; rolled back on any failure. `readCommitted`: Tinyid's isolation for its retries. */
  private tx<T>(fn: (c: PoolConnection) => Promise<T>, readCommitted = false): Promise<T> {
    return this.withConnection(async (c) => {
      if (readCommitted) await this.run(c, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
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

const BACKEND = 'MySQL Tinyid store';
