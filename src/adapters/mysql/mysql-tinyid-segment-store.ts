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
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { InvalidArgumentError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, readBack, sameSinceRange } from '../kit/segment-rules.js';
import { type ForeignTableOptions, SideTable } from '../kit/side-table.js';
import {
  allocationOf,
  endAfter,
  maxIdBelow,
  nextMaxId,
  PerTagQueue,
  raceBackoff,
  residueOf,
  TINYID_RETRIES,
  TINYID_SCHEMA,
  type TinyidRow,
  tagInfoFromTinyidRow,
} from '../kit/tinyid-table.js';
import { MysqlStatements, type MysqlStoreOptions } from './mysql-connection.js';

export interface MysqlTinyidSegmentStoreOptions extends MysqlStoreOptions, ForeignTableOptions {}

type Row = TinyidRow & RowDataPacket;

export class MysqlTinyidSegmentStore implements SegmentStore {
  readonly kind = 'mysql-tinyid';
  readonly table: string;
  private readonly db: MysqlStatements;
  private readonly side: SideTable;
  private readonly queue = new PerTagQueue();
  private initialised = false;
  private closed = false;

  constructor(options: MysqlTinyidSegmentStoreOptions) {
    this.side = new SideTable(TINYID_SCHEMA, options, 'mysql');
    this.table = this.side.foreign;
    this.db = new MysqlStatements(options, BACKEND);
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.db.withConnection((c) =>
      this.side.ensure(
        this.db.runner(c),
        `MySQL Tinyid store: table ${this.table} not found; create it with Tinyid's tinyid-server/db.sql (see docs/migrate.md) or fix ?table=`,
      ),
    );
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.queue.run(tag, () => this.allocateNow(tag, step));
  }

  private allocateNow(tag: string, step: number | undefined): Promise<Allocation> {
    return this.db.transaction(async (c) => {
      for (let i = 0; i < TINYID_RETRIES; i++) {
        const [row] = await this.db.rows<Row>(
          c,
          `select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version from ${this.table} where biz_type = ?`,
          [tag],
        );
        if (!row) throw new TagNotFoundError(tag);
        const residue = residueOf(row);
        const b = BigInt(String(row.max_id));
        const next = nextMaxId(b, row, residue, step);
        if (next === undefined) throw exhausted(tag);
        const upd = (await this.db.run(
          c,
          `update ${this.table} set max_id = CAST(? AS SIGNED), update_time = now(), version = version + 1
           where id = ? and max_id = CAST(? AS SIGNED) and version = CAST(? AS SIGNED) and biz_type = ?`,
          [next.toString(), String(row.id), String(row.max_id), String(row.version), row.biz_type],
        )) as ResultSetHeader;
        if (upd.affectedRows === 1) return allocationOf(b, next, row, residue, await this.side.read(this.db.runner(c), tag));
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
    const rows = await this.db.select<Row>(`${this.selectJoined()} WHERE t.biz_type = ?`, [this.table, tag]);
    return rows[0] ? tagInfoFromTinyidRow(rows[0]) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const rows = await this.db.select<Row>(`${this.selectJoined()} ORDER BY CONVERT(t.biz_type USING utf8mb4) COLLATE utf8mb4_bin`, [
      this.table,
    ]);
    return rows.map(tagInfoFromTinyidRow);
  }

  /** A row as Tinyid's db.sql makes one (begin_id = max_id, delta 1, remainder 0); the side row gets a new generation. */
  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    const b = maxIdBelow(start).toString();
    await this.db.transaction(async (c) => {
      try {
        await this.db.run(
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
      const run = this.db.runner(c);
      await this.side.created(run, t.tag);
      await this.side.described(run, t.tag, t.description ?? '');
    });
    return readBack(this, t.tag);
  }

  /** The step counts IDs, as everywhere in Sequoia: Tinyid's row gets `step * delta`. */
  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    await this.db.transaction(async (c) => {
      const r = (await this.db.run(c, `UPDATE ${this.table} SET step = COALESCE(? * delta, step), update_time = now() WHERE biz_type = ?`, [
        update.step ?? null,
        tag,
      ])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      if (update.description !== undefined) await this.side.described(this.db.runner(c), tag, update.description);
    });
    return readBack(this, tag);
  }

  /**
   * Deletes the Tinyid row, as a Tinyid admin would, and gives the side row a
   * new generation (its fence epoch and description stay): a row Tinyid's
   * admins insert again must not pass for the deleted one in a give-back.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.db.transaction(async (c) => {
      const r = (await this.db.run(c, `DELETE FROM ${this.table} WHERE biz_type = ?`, [tag])) as ResultSetHeader;
      if (r.affectedRows === 0) throw new TagNotFoundError(tag);
      await this.side.deleted(this.db.runner(c), tag);
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    await this.db.transaction(async (c) => {
      const r = (await this.db.run(
        c,
        `UPDATE ${this.table} SET max_id = GREATEST(max_id, CAST(? AS SIGNED)), update_time = now(), version = version + 1 WHERE biz_type = ?`,
        [maxIdBelow(to).toString(), tag],
      )) as ResultSetHeader;
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
      const [row] = await this.db.rows<Row>(
        c,
        `SELECT id, biz_type, max_id, step, delta, remainder, version FROM ${this.table} WHERE biz_type = ? FOR UPDATE`,
        [tag],
      );
      if (!row || endAfter(BigInt(String(row.max_id)), residueOf(row)) !== expectedMaxId) return false;
      if (!sameSinceRange(await this.side.read(this.db.runner(c), tag, true), expectedFenceEpoch, expectedGeneration)) return false;
      if (newMaxId === expectedMaxId) return true;
      await this.db.run(
        c,
        `UPDATE ${this.table} SET max_id = CAST(? AS SIGNED), update_time = now(), version = version + 1 WHERE biz_type = ?`,
        [maxIdBelow(newMaxId).toString(), tag],
      );
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
    return this.side.joined('t.id, t.biz_type, t.max_id, t.step, t.delta, t.remainder, t.version, t.update_time', 't', 'biz_type');
  }
}

const BACKEND = 'MySQL Tinyid store';
