/**
 * SegmentStore on Tinyid's own table (`tiny_id_info`, name configurable) in
 * PostgreSQL, so Tinyid servers (or a port of its DAO) and Sequoia servers
 * draw from one row without overlap. An allocation is Tinyid's
 * DbSegmentIdServiceImpl: in one READ COMMITTED transaction, read the row,
 * then the optimistic update, retried while another allocator won the race:
 *
 *   SELECT id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version
 *     FROM tiny_id_info WHERE biz_type = $1
 *   UPDATE tiny_id_info SET max_id = $1, update_time = now(), version = version + 1
 *     WHERE id = $2 AND max_id = $3 AND version = $4 AND biz_type = $5
 *
 * The segment's IDs keep Tinyid's rule (id % delta == remainder): see
 * kit/tinyid-table.ts for the mapping onto Sequoia's ranges. Every write of
 * Sequoia's that moves max_id (fence, give-back) also bumps `version`, so a
 * Tinyid server that read the row before it loses its race and reads again.
 *
 * Tinyid's table gains nothing: the fence epoch, the generation and the
 * description live in the side table (one row per Tinyid table and tag).
 * `init` creates the side table only; Tinyid's table must exist.
 */
import { InvalidArgumentError, type SequoiaError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import { MAX_ID } from '../../core/id.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, DEFAULT_START, DEFAULT_STEP, exhausted, LEGACY_GENERATION, newGeneration } from '../kit/segment-rules.js';
import { storeError } from '../kit/store-boundary.js';
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
import { type PgClientLike, PostgresConnection, type PostgresConnectionOptions } from './postgres-connection.js';

/** Key of the advisory lock that serialises schema migrations ("SEQU"), as the native store. */
const MIGRATION_LOCK_KEY = 0x53455155;

export interface PostgresTinyidSegmentStoreOptions extends PostgresConnectionOptions, TinyidTableOptions {
  /** A connection shared with the lease store; the other connection options are then ignored. */
  readonly connection?: PostgresConnection;
}

export class PostgresTinyidSegmentStore implements SegmentStore {
  readonly kind = 'postgres-tinyid';
  readonly table: string;
  readonly sideTable: string;
  private readonly connection: PostgresConnection;
  private readonly queue = new PerTagQueue();
  private initialised = false;
  private closed = false;

  constructor(options: PostgresTinyidSegmentStoreOptions) {
    const names = tinyidTableNames(options);
    this.table = names.table;
    this.sideTable = names.side;
    this.connection = (options.connection ?? new PostgresConnection(options)).retain();
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const r = await c.query('SELECT to_regclass($1) IS NOT NULL AS present', [this.table]);
      if (!(r.rows[0] as { present: boolean }).present) {
        throw new UnavailableError(
          'STORE_UNAVAILABLE',
          `PostgreSQL Tinyid store: table ${this.table} not found; create it as docs/migrate.md shows or fix ?table=`,
        );
      }
      await c.query(`CREATE TABLE IF NOT EXISTS ${this.sideTable} (
        source_table TEXT NOT NULL,
        tag TEXT NOT NULL,
        fence_epoch INTEGER NOT NULL DEFAULT 0,
        generation BIGINT NOT NULL DEFAULT 0,
        description TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (source_table, tag)
      )`);
    });
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.queue.run(tag, () => this.allocateNow(tag, step));
  }

  private allocateNow(tag: string, step: number | undefined): Promise<Allocation> {
    return this.tx(async (c) => {
      // Tinyid's @Transactional(isolation = READ_COMMITTED): each retry's SELECT sees the winner's commit.
      await c.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      for (let i = 0; i < TINYID_RETRIES; i++) {
        const r = await c.query(
          `SELECT id::text AS id, biz_type, begin_id::text AS begin_id, max_id::text AS max_id, step, delta, remainder,
                  create_time, update_time, version::text AS version
           FROM ${this.table} WHERE biz_type = $1`,
          [tag],
        );
        const row = r.rows[0] as TinyidRow | undefined;
        if (!row) throw new TagNotFoundError(tag);
        const residue = residueOf(row);
        const b = BigInt(row.max_id);
        const next = nextMaxId(b, row, residue, step);
        if (next === undefined) throw exhausted(tag);
        const upd = await c.query(
          `UPDATE ${this.table} SET max_id = $1::bigint, update_time = now(), version = version + 1
           WHERE id = $2::bigint AND max_id = $3::bigint AND version = $4::bigint AND biz_type = $5`,
          [next.toString(), String(row.id), row.max_id, String(row.version), row.biz_type],
        );
        if (upd.rowCount === 1) return allocationOf(b, next, row, residue, await this.sideOf(c, tag));
        await raceBackoff(i);
      }
      throw new UnavailableError(
        'STORE_UNAVAILABLE',
        `tag ${JSON.stringify(tag)}: lost the race for the Tinyid row ${TINYID_RETRIES} times`,
        {
          retryAfterMs: 100,
        },
      );
    });
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const r = await this.q(`${this.selectJoined()} WHERE t.biz_type = $2`, [this.table, tag]);
    const row = r.rows[0] as TinyidRow | undefined;
    return row ? tagInfoFromTinyidRow(row) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const r = await this.q(`${this.selectJoined()} ORDER BY t.biz_type COLLATE "C"`, [this.table]);
    return (r.rows as TinyidRow[]).map(tagInfoFromTinyidRow);
  }

  /** A row as Tinyid's db.sql makes one (begin_id = max_id, delta 1, remainder 0); the side row gets a new generation. */
  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    if (start < 0n || start > MAX_ID) throw new InvalidArgumentError('start must be from 0 to 2^63-1');
    const b = maxIdBelow(start).toString();
    await this.tx(async (c) => {
      try {
        await c.query(
          `INSERT INTO ${this.table} (biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version)
           VALUES ($1, $2::bigint, $2::bigint, $3, 1, 0, now(), now(), 0)`,
          [t.tag, b, t.step ?? DEFAULT_STEP],
        );
      } catch (e) {
        if ((e as { code?: string }).code === '23505') throw new TagExistsError(t.tag);
        if ((e as { code?: string }).code === '22001') throw new InvalidArgumentError(`tag: longer than ${this.table}.biz_type allows`);
        throw e;
      }
      await c.query(
        `INSERT INTO ${this.sideTable} (source_table, tag, fence_epoch, generation, description) VALUES ($1, $2, 0, $3::bigint, $4)
         ON CONFLICT (source_table, tag) DO UPDATE SET fence_epoch = 0, generation = EXCLUDED.generation, description = EXCLUDED.description`,
        [this.table, t.tag, newGeneration(), t.description ?? ''],
      );
    });
    return this.mustGet(t.tag);
  }

  /** The step counts IDs, as everywhere in Sequoia: Tinyid's row gets `step * delta`. */
  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    await this.tx(async (c) => {
      const r = await c.query(
        `UPDATE ${this.table} SET step = COALESCE($2::integer * delta, step), update_time = now() WHERE biz_type = $1`,
        [tag, update.step ?? null],
      );
      if (!r.rowCount) throw new TagNotFoundError(tag);
      if (update.description !== undefined) {
        await c.query(
          `INSERT INTO ${this.sideTable} (source_table, tag, description) VALUES ($1, $2, $3)
           ON CONFLICT (source_table, tag) DO UPDATE SET description = EXCLUDED.description`,
          [this.table, tag, update.description],
        );
      }
    });
    return this.mustGet(tag);
  }

  /**
   * Deletes the Tinyid row, as a Tinyid admin would, and gives the side row a
   * new generation (its fence epoch and description stay): Tinyid's admins
   * create rows again with an INSERT that Sequoia never sees, and that row
   * must not pass for the deleted one in a give-back.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.tx(async (c) => {
      const r = await c.query(`DELETE FROM ${this.table} WHERE biz_type = $1`, [tag]);
      if (!r.rowCount) throw new TagNotFoundError(tag);
      await c.query(
        `INSERT INTO ${this.sideTable} (source_table, tag, fence_epoch, generation) VALUES ($1, $2, 0, $3::bigint)
         ON CONFLICT (source_table, tag) DO UPDATE SET generation = EXCLUDED.generation`,
        [this.table, tag, newGeneration()],
      );
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    if (to < 0n || to > MAX_ID) throw new InvalidArgumentError('to must be from 0 to 2^63-1');
    await this.tx(async (c) => {
      const r = await c.query(
        `UPDATE ${this.table} SET max_id = GREATEST(max_id, $2::bigint), update_time = now(), version = version + 1 WHERE biz_type = $1`,
        [tag, maxIdBelow(to).toString()],
      );
      if (!r.rowCount) throw new TagNotFoundError(tag);
      await c.query(
        `INSERT INTO ${this.sideTable} (source_table, tag, fence_epoch, generation) VALUES ($1, $2, 1, 0)
         ON CONFLICT (source_table, tag) DO UPDATE SET fence_epoch = ${this.sideTable}.fence_epoch + 1`,
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
      const r = await c.query(
        `SELECT id::text AS id, biz_type, max_id::text AS max_id, step, delta, remainder, version::text AS version
         FROM ${this.table} WHERE biz_type = $1 FOR UPDATE`,
        [tag],
      );
      const row = r.rows[0] as TinyidRow | undefined;
      if (!row || endAfter(BigInt(row.max_id), residueOf(row)) !== expectedMaxId) return false;
      const side = await this.sideOf(c, tag, true);
      if (expectedFenceEpoch !== undefined && side.fenceEpoch !== expectedFenceEpoch) return false;
      if (expectedGeneration !== undefined && side.generation !== expectedGeneration) return false;
      if (newMaxId === expectedMaxId) return true;
      await c.query(`UPDATE ${this.table} SET max_id = $2::bigint, update_time = now(), version = version + 1 WHERE biz_type = $1`, [
        tag,
        maxIdBelow(newMaxId).toString(),
      ]);
      return true;
    });
  }

  async ping(): Promise<void> {
    await this.q('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection.release();
  }

  private async sideOf(c: PgClientLike, tag: string, locking = false): Promise<{ fenceEpoch: number; generation: string }> {
    const r = await c.query(
      `SELECT fence_epoch, generation::text AS generation FROM ${this.sideTable} WHERE source_table = $1 AND tag = $2${locking ? ' FOR UPDATE' : ''}`,
      [this.table, tag],
    );
    const row = r.rows[0] as { fence_epoch: number; generation: string } | undefined;
    return { fenceEpoch: Number(row?.fence_epoch ?? 0), generation: row?.generation ?? LEGACY_GENERATION };
  }

  private selectJoined(): string {
    return `SELECT t.id::text AS id, t.biz_type, t.max_id::text AS max_id, t.step, t.delta, t.remainder, t.version::text AS version,
        t.update_time, s.fence_epoch, s.generation::text AS generation, s.description
      FROM ${this.table} t LEFT JOIN ${this.sideTable} s ON s.source_table = $1 AND s.tag = t.biz_type`;
  }

  private async mustGet(tag: string): Promise<TagInfo> {
    const info = await this.getTag(tag);
    if (!info) throw new TagNotFoundError(tag);
    return info;
  }

  private wrap(e: unknown): SequoiaError {
    return storeError(BACKEND, e, this.connection.target);
  }

  private async q(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    try {
      return await this.connection.pool.query(text, values);
    } catch (e) {
      throw this.wrap(e);
    }
  }

  private tx<T>(fn: (c: PgClientLike) => Promise<T>): Promise<T> {
    return this.connection.transaction(BACKEND, fn);
  }
}

const BACKEND = 'PostgreSQL Tinyid store';
