/**
 * SegmentStore on Leaf's own table (`leaf_alloc`, name configurable) in
 * PostgreSQL, so Leaf servers (or a port of Leaf's DAO) and Sequoia servers
 * draw from one row without overlap. An allocation is Leaf's IDAllocDao,
 * statement for statement, in one transaction:
 *
 *   BEGIN
 *   UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = $1      -- or max_id + $2 (dynamic step)
 *   SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = $1
 *   SELECT fence_epoch FROM sequoia_leaf_state WHERE leaf_table = … AND tag = $1   -- Sequoia's side table
 *   COMMIT
 *
 * The UPDATE's row lock serialises every allocator, Leaf's and Sequoia's.
 * Leaf's statement has no overflow check; PostgreSQL refuses a BIGINT past
 * 2^63-1 (SQLSTATE 22003), which is answered as ID_SPACE_EXHAUSTED.
 *
 * The Leaf table gains no column: the fence epoch and the tag's generation
 * live in the side table (one row per Leaf table and tag; every `createTag`
 * writes a fresh random generation there). `init` creates the side
 * table only; the Leaf table must exist (a mistyped name must not silently
 * become an empty table where `tag create` would start again at 1).
 */
import { TagExistsError, TagNotFoundError } from '../../core/errors.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { isBigintOverflow, type LeafRow, LEAF_SCHEMA, tagInfoFromLeafRow } from '../kit/leaf-table.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, readBack, sameSinceRange } from '../kit/segment-rules.js';
import { type ForeignTableOptions, SideTable } from '../kit/side-table.js';
import { type PgClientLike, PostgresConnection, type PostgresConnectionOptions, runnerOn } from './postgres-connection.js';

export interface PostgresLeafSegmentStoreOptions extends PostgresConnectionOptions, ForeignTableOptions {
  /** A connection shared with the lease store; the other connection options are then ignored. */
  readonly connection?: PostgresConnection;
}

export class PostgresLeafSegmentStore implements SegmentStore {
  readonly kind = 'postgres-leaf';
  readonly table: string;
  private readonly connection: PostgresConnection;
  private readonly side: SideTable;
  private initialised = false;
  private closed = false;

  constructor(options: PostgresLeafSegmentStoreOptions) {
    this.side = new SideTable(LEAF_SCHEMA, options, 'postgres');
    this.table = this.side.foreign;
    this.connection = (options.connection ?? new PostgresConnection(options)).retain();
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.connection.migration(BACKEND, (c) =>
      this.side.ensure(
        runnerOn(c),
        `PostgreSQL Leaf store: table ${this.table} not found; create it as Leaf's scripts/leaf_alloc.sql does (see docs/migrate.md) or fix ?table=`,
      ),
    );
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.tx(async (c) => {
      let upd: { rowCount: number | null };
      try {
        upd =
          step === undefined
            ? await c.query(`UPDATE ${this.table} SET max_id = max_id + step WHERE biz_tag = $1`, [tag])
            : await c.query(`UPDATE ${this.table} SET max_id = max_id + $2 WHERE biz_tag = $1`, [tag, step]);
      } catch (e) {
        if (isBigintOverflow(e)) throw exhausted(tag);
        throw e;
      }
      if (!upd.rowCount) throw new TagNotFoundError(tag);
      const r = await c.query(`SELECT biz_tag, max_id::text AS max_id, step FROM ${this.table} WHERE biz_tag = $1`, [tag]);
      const row = r.rows[0] as { max_id: string; step: number } | undefined;
      if (!row) throw new TagNotFoundError(tag);
      const { fenceEpoch, generation } = await this.side.read(runnerOn(c), tag);
      return { maxId: BigInt(row.max_id), step: step ?? row.step, storedStep: row.step, fenceEpoch, generation };
    });
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const r = await this.q(`${this.selectJoined()} WHERE l.biz_tag = $2`, [this.table, tag]);
    const row = r.rows[0] as LeafRow | undefined;
    return row ? tagInfoFromLeafRow(row) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const r = await this.q(`${this.selectJoined()} ORDER BY l.biz_tag COLLATE "C"`, [this.table]);
    return (r.rows as LeafRow[]).map(tagInfoFromLeafRow);
  }

  /** As Leaf's admins do: `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (…)`; the side row gets a new generation. */
  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    await this.tx(async (c) => {
      try {
        await c.query(`INSERT INTO ${this.table} (biz_tag, max_id, step, description) VALUES ($1, $2::bigint, $3, $4)`, [
          t.tag,
          start.toString(),
          t.step ?? DEFAULT_STEP,
          t.description ?? '',
        ]);
      } catch (e) {
        if ((e as { code?: string }).code === '23505') throw new TagExistsError(t.tag);
        throw e;
      }
      await this.side.created(runnerOn(c), t.tag);
    });
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const r = await this.q(
      `UPDATE ${this.table} SET step = COALESCE($2::integer, step), description = COALESCE($3::text, description), update_time = CURRENT_TIMESTAMP
       WHERE biz_tag = $1`,
      [tag, update.step ?? null, update.description ?? null],
    );
    if (!r.rowCount) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  /**
   * Deletes the Leaf row, as a Leaf admin would, and gives the side row a new
   * generation (its fence epoch stays): Leaf's admins create tags again with
   * an INSERT that Sequoia never sees, and that row must not pass for the
   * deleted one in a give-back. Leaf servers drop the tag from their cache on
   * their next refresh; see docs/migrate.md before re-creating a tag.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.tx(async (c) => {
      const r = await c.query(`DELETE FROM ${this.table} WHERE biz_tag = $1`, [tag]);
      if (!r.rowCount) throw new TagNotFoundError(tag);
      await this.side.deleted(runnerOn(c), tag);
    });
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    await this.tx(async (c) => {
      const r = await c.query(`UPDATE ${this.table} SET max_id = GREATEST(max_id, $2::bigint) WHERE biz_tag = $1`, [tag, to.toString()]);
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
      // The Leaf row's lock first (every allocator and every fence takes it), then the side row.
      const r = await c.query(`SELECT max_id::text AS max_id FROM ${this.table} WHERE biz_tag = $1 FOR UPDATE`, [tag]);
      const row = r.rows[0] as { max_id: string } | undefined;
      if (!row || BigInt(row.max_id) !== expectedMaxId) return false;
      if (!sameSinceRange(await this.side.read(runnerOn(c), tag, true), expectedFenceEpoch, expectedGeneration)) return false;
      await c.query(`UPDATE ${this.table} SET max_id = $2::bigint WHERE biz_tag = $1`, [tag, newMaxId.toString()]);
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
    return this.side.joined('l.biz_tag, l.max_id::text AS max_id, l.step, l.description, l.update_time', 'l', 'biz_tag');
  }

  private q(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    return this.connection.query(BACKEND, text, values);
  }

  private tx<T>(fn: (c: PgClientLike) => Promise<T>): Promise<T> {
    return this.connection.transaction(BACKEND, fn);
  }
}

const BACKEND = 'PostgreSQL Leaf store';
