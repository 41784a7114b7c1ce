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
import { type PgClientLike, PostgresConnection, type PostgresConnectionOptions, runnerOn } from './postgres-connection.js';

export interface PostgresTinyidSegmentStoreOptions extends PostgresConnectionOptions, ForeignTableOptions {
  /** A connection shared with the lease store; the other connection options are then ignored. */
  readonly connection?: PostgresConnection;
}

export class PostgresTinyidSegmentStore implements SegmentStore {
  readonly kind = 'postgres-tinyid';
  readonly table: string;
  private readonly connection: PostgresConnection;
  private readonly side: SideTable;
  private readonly queue = new PerTagQueue();
  private initialised = false;
  private closed = false;

  constructor(options: PostgresTinyidSegmentStoreOptions) {
    this.side = new SideTable(TINYID_SCHEMA, options, 'postgres');
    this.table = this.side.foreign;
    this.connection = (options.connection ?? new PostgresConnection(options)).retain();
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.connection.migration(BACKEND, (c) =>
      this.side.ensure(
        runnerOn(c),
        `PostgreSQL Tinyid store: table ${this.table} not found; create it as docs/migrate.md shows or fix ?table=`,
      ),
    );
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
        if (upd.rowCount === 1) return allocationOf(b, next, row, residue, await this.side.read(runnerOn(c), tag));
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
    assertStoredId('start', start);
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
      await this.side.created(runnerOn(c), t.tag);
      await this.side.described(runnerOn(c), t.tag, t.description ?? '');
    });
    return readBack(this, t.tag);
  }

  /** The step counts IDs, as everywhere in Sequoia: Tinyid's row gets `step * delta`. */
  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    await this.tx(async (c) => {
      const r = await c.query(
        `UPDATE ${this.table} SET step = COALESCE($2::integer * delta, step), update_time = now() WHERE biz_type = $1`,
        [tag, update.step ?? null],
      );
      if (!r.rowCount) throw new TagNotFoundError(tag);
      if (update.description !== undefined) await this.side.described(runnerOn(c), tag, update.description);
    });
    return readBack(this, tag);
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
      await this.side.deleted(runnerOn(c), tag);
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    await this.tx(async (c) => {
      const r = await c.query(
        `UPDATE ${this.table} SET max_id = GREATEST(max_id, $2::bigint), update_time = now(), version = version + 1 WHERE biz_type = $1`,
        [tag, maxIdBelow(to).toString()],
      );
      if (!r.rowCount) throw new TagNotFoundError(tag);
      await this.side.fenced(runnerOn(c), tag);
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
    return this.tx(async (c) => {
      const r = await c.query(
        `SELECT id::text AS id, biz_type, max_id::text AS max_id, step, delta, remainder, version::text AS version
         FROM ${this.table} WHERE biz_type = $1 FOR UPDATE`,
        [tag],
      );
      const row = r.rows[0] as TinyidRow | undefined;
      if (!row || endAfter(BigInt(row.max_id), residueOf(row)) !== expectedMaxId) return false;
      if (!sameSinceRange(await this.side.read(runnerOn(c), tag, true), expectedFenceEpoch, expectedGeneration)) return false;
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

  private selectJoined(): string {
    return this.side.joined(
      't.id::text AS id, t.biz_type, t.max_id::text AS max_id, t.step, t.delta, t.remainder, t.version::text AS version, t.update_time',
      't',
      'biz_type',
    );
  }

  private q(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    return this.connection.query(BACKEND, text, values);
  }

  private tx<T>(fn: (c: PgClientLike) => Promise<T>): Promise<T> {
    return this.connection.transaction(BACKEND, fn);
  }
}

const BACKEND = 'PostgreSQL Tinyid store';
