/**
 * SegmentStore on PostgreSQL (`pg`). Every allocation is ONE atomic statement:
 *
 *   UPDATE <table> SET max_id = max_id + s WHERE tag = $1 AND max_id <= 2^63-1 - s RETURNING ...
 *
 * The row lock of the UPDATE serialises concurrent allocators (any number of
 * processes and machines); the WHERE clause makes the overflow check part of
 * the same statement, so max_id never passes 2^63-1 and never wraps. When no
 * row matches, a second read tells TAG_NOT_FOUND from ID_SPACE_EXHAUSTED.
 *
 * BIGINT values are always selected as text (`max_id::text`) and turned into
 * bigint here, so a global `pg.types` parser set by someone else can never
 * make them lossy JS numbers. Only parameterised SQL; the one interpolated
 * name, the table, is checked against /^[a-z_][a-z0-9_]{0,62}$/.
 *
 * The pool reconnects by itself (a broken client is dropped and a new one made
 * on the next query), so the store survives a server restart; idle-client
 * errors are caught by the pool's 'error' listener and never crash the process.
 * Driver errors become STORE_UNAVAILABLE with the original as `cause`.
 */
import { type SequoiaError, TagExistsError, TagNotFoundError } from '../../core/errors.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, newGeneration } from '../kit/segment-rules.js';
import { storeError, tagInfoFromTextRow } from '../kit/store-boundary.js';
import { type PgPoolLike, PostgresConnection, type PostgresConnectionOptions } from './postgres-connection.js';
import type { LedgerEntry, LedgerPage, LedgerTop, ServerIdentity } from '../../ports/range-ledger.js';
import {
  entryFromRow,
  fencedRange,
  identityValues,
  LEDGER_COLUMNS,
  ledgerDdl,
  sqlLedgerPage,
  ledgerPlace,
  type LedgerRowText,
  ledgerTopFromRow,
  ledgerTopSql,
  rangeLength,
} from '../kit/range-ledger.js';

/** 1: the table; 2: its `generation` column (see TagInfo.generation); 3: the range ledger beside it. */
const SCHEMA_VERSION = 3;

export interface PostgresSegmentStoreOptions extends PostgresConnectionOptions {
  /** A connection shared with the lease store; the other connection options are then ignored. */
  readonly connection?: PostgresConnection;
  /** Table name; default `sequoia_alloc`. Must match /^[a-z_][a-z0-9_]{0,62}$/. */
  readonly table?: string;
  /** Who takes ranges, for the ledger. Default: this process. */
  readonly identity?: ServerIdentity;
  /** False only in the benchmark that measures the ledger's cost (`npm run bench -- ledger`); never from a URL. */
  readonly recordLedger?: boolean;
}

interface RowText {
  tag: string;
  max_id: string;
  step: number;
  description: string;
  updated_at: Date;
  fence_epoch: number;
  generation: string;
}

export class PostgresSegmentStore implements SegmentStore {
  readonly kind = 'postgres';
  readonly table: string;
  private readonly ledger: string;
  private readonly who: ServerIdentity;
  private readonly recording: boolean;
  private readonly connection: PostgresConnection;
  private readonly pool: PgPoolLike;
  private initialised = false;
  private closed = false;

  constructor(options: PostgresSegmentStoreOptions) {
    ({ table: this.table, ledger: this.ledger, who: this.who } = ledgerPlace(options));
    this.recording = options.recordLedger ?? true;
    this.connection = (options.connection ?? new PostgresConnection(options)).retain();
    this.pool = this.connection.pool;
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    const t = this.table;
    await this.connection.migration(BACKEND, async (c) => {
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
      const r = await c.query('SELECT version FROM sequoia_schema WHERE component = $1', [t]);
      const version = (r.rows[0] as { version: number } | undefined)?.version ?? 0;
      if (version < 1) {
        await c.query(`CREATE TABLE IF NOT EXISTS ${t} (
          tag TEXT PRIMARY KEY,
          max_id BIGINT NOT NULL CHECK (max_id >= 0),
          step INTEGER NOT NULL CHECK (step > 0),
          description TEXT NOT NULL DEFAULT '',
          updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
          fence_epoch INTEGER NOT NULL DEFAULT 0,
          generation BIGINT NOT NULL DEFAULT 0
        )`);
      }
      if (version < 2) {
        // Under the same advisory lock; IF NOT EXISTS keeps it idempotent.
        await c.query(`ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS generation BIGINT NOT NULL DEFAULT 0`);
      }
      for (const ddl of ledgerDdl(this.ledger)) await c.query(ddl);
      await c.query(
        `INSERT INTO sequoia_schema (component, version) VALUES ($1, $2)
         ON CONFLICT (component) DO UPDATE SET version = GREATEST(sequoia_schema.version, EXCLUDED.version)`,
        [t, SCHEMA_VERSION],
      );
    });
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    // One statement: the ledger row commits with the range or not at all.
    const r = await this.q(
      `WITH a AS (
         UPDATE ${this.table}
           SET max_id = max_id + COALESCE($2::integer, step), updated_at = now()
         WHERE tag = $1 AND max_id <= 9223372036854775807 - COALESCE($2::integer, step)
         RETURNING max_id, step, fence_epoch, generation, COALESCE($2::integer, step) AS applied
       ), l AS (
         INSERT INTO ${this.ledger} (${LEDGER_COLUMNS})
         SELECT $1, 'allocate', a.max_id - a.applied, a.max_id - 1, 1, a.applied, $3, $4, $5, $6,
                (extract(epoch FROM now()) * 1000)::bigint, a.fence_epoch, a.generation FROM a WHERE $7::boolean
       )
       SELECT max_id::text AS max_id, step, fence_epoch, generation::text AS generation, applied FROM a`,
      [tag, step ?? null, ...identityValues(this.who), this.recording],
    );
    const row = r.rows[0] as { max_id: string; step: number; fence_epoch: number; generation: string; applied: number } | undefined;
    if (row) {
      return {
        maxId: BigInt(row.max_id),
        step: row.applied,
        storedStep: row.step,
        fenceEpoch: row.fence_epoch,
        generation: row.generation,
      };
    }
    // No row matched: either the tag is missing or the sum would pass 2^63-1.
    if ((await this.getTag(tag)) === undefined) throw new TagNotFoundError(tag);
    throw exhausted(tag);
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const r = await this.q(`SELECT ${COLUMNS} FROM ${this.table} WHERE tag = $1`, [tag]);
    const row = r.rows[0] as RowText | undefined;
    return row ? tagInfoFromTextRow(row) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    // COLLATE "C": byte order, the same order every other store lists in.
    const r = await this.q(`SELECT ${COLUMNS} FROM ${this.table} ORDER BY tag COLLATE "C"`);
    return (r.rows as RowText[]).map(tagInfoFromTextRow);
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    try {
      const r = await this.pool.query(
        `INSERT INTO ${this.table} (tag, max_id, step, description, updated_at, fence_epoch, generation)
         VALUES ($1, $2::bigint, $3, $4, now(), 0, $5::bigint) RETURNING ${COLUMNS}`,
        [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? '', newGeneration()],
      );
      return tagInfoFromTextRow(r.rows[0] as RowText);
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw new TagExistsError(t.tag);
      throw this.wrap(e);
    }
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const r = await this.q(
      `UPDATE ${this.table}
         SET step = COALESCE($2::integer, step), description = COALESCE($3::text, description), updated_at = now()
       WHERE tag = $1 RETURNING ${COLUMNS}`,
      [tag, update.step ?? null, update.description ?? null],
    );
    const row = r.rows[0] as RowText | undefined;
    if (!row) throw new TagNotFoundError(tag);
    return tagInfoFromTextRow(row);
  }

  async deleteTag(tag: string): Promise<void> {
    const r = await this.q(`DELETE FROM ${this.table} WHERE tag = $1`, [tag]);
    if (!r.rowCount) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    // One transaction: the row lock taken by the first read holds allocators off until the ledger row is written.
    const r = await this.connection.transaction(BACKEND, async (c) => {
      const old = (await c.query(`SELECT max_id::text AS max_id FROM ${this.table} WHERE tag = $1 FOR UPDATE`, [tag])).rows[0] as
        { max_id: string } | undefined;
      if (!old) return { rows: [] };
      const u = await c.query(
        `UPDATE ${this.table}
           SET max_id = GREATEST(max_id, $2::bigint), fence_epoch = fence_epoch + 1, updated_at = now()
         WHERE tag = $1 RETURNING ${COLUMNS}`,
        [tag, to.toString()],
      );
      const row = u.rows[0] as RowText;
      const jumped = fencedRange(BigInt(old.max_id), to);
      if (jumped) {
        await c.query(
          `INSERT INTO ${this.ledger} (${LEDGER_COLUMNS})
           VALUES ($1, 'fence', $2::bigint, $3::bigint, 1, $4, $5, $6, $7, $8, (extract(epoch FROM now()) * 1000)::bigint, $9, $10::bigint)`,
          [
            tag,
            jumped.first.toString(),
            jumped.last.toString(),
            rangeLength(jumped),
            ...identityValues(this.who),
            row.fence_epoch,
            row.generation,
          ],
        );
      }
      return u;
    });
    const row = r.rows[0] as RowText | undefined;
    if (!row) throw new TagNotFoundError(tag);
    return tagInfoFromTextRow(row);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    // One statement: the row lock makes the compare and the set atomic, and the ledger row goes with it.
    const r = await this.q(
      `WITH g AS (
         UPDATE ${this.table} SET max_id = $3::bigint, updated_at = now()
         WHERE tag = $1 AND max_id = $2::bigint AND fence_epoch = $4::bigint AND generation = $5::bigint
         RETURNING fence_epoch, generation
       ), l AS (
         INSERT INTO ${this.ledger} (${LEDGER_COLUMNS})
         SELECT $1, 'give-back', $3::bigint, $2::bigint - 1, 1, ($2::bigint - $3::bigint)::integer, $6, $7, $8, $9,
                (extract(epoch FROM now()) * 1000)::bigint, g.fence_epoch, g.generation FROM g WHERE $3::bigint < $2::bigint
       )
       SELECT 1 FROM g`,
      [tag, expect.maxId.toString(), from.toString(), String(expect.fenceEpoch), expect.generation, ...identityValues(this.who)],
    );
    return r.rowCount === 1;
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    const r = await this.q(
      `SELECT ${LEDGER_TEXT} FROM ${this.ledger} l WHERE tag = $1 AND first_id <= $2::bigint AND last_id >= $2::bigint ORDER BY l.at_ms, l.first_id`,
      [tag, id.toString()],
    );
    return (r.rows as LedgerRowText[]).map(entryFromRow);
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    const r = await this.q(`SELECT ${LEDGER_TEXT} FROM ${this.ledger} l WHERE tag = $1 ORDER BY l.first_id, l.at_ms`, [tag]);
    return (r.rows as LedgerRowText[]).map(entryFromRow);
  }

  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    return sqlLedgerPage(
      cursor,
      limit,
      { from: 'l.first_id >= $2::bigint ORDER BY l.first_id LIMIT $3', at: 'l.first_id = $2::bigint' },
      async (where, args) => (await this.q(`SELECT ${LEDGER_TEXT} FROM ${this.ledger} l WHERE tag = $1 AND ${where}`, [tag, ...args])).rows,
    );
  }

  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    const r = await this.q(ledgerTopSql(this.ledger, 'text', '$1'), [tag]);
    return ledgerTopFromRow(r.rows[0] as Parameters<typeof ledgerTopFromRow>[0]);
  }

  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    const r = await this.q(
      `DELETE FROM ${this.ledger} WHERE ctid IN (SELECT ctid FROM ${this.ledger} WHERE at_ms < $1::bigint ORDER BY at_ms LIMIT $2)`,
      [String(beforeMs), limit],
    );
    return r.rowCount ?? 0;
  }

  async ping(): Promise<void> {
    await this.q('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection.release();
  }

  /** Driver errors become STORE_UNAVAILABLE naming the backend and its host, port and database. */
  private wrap(e: unknown): SequoiaError {
    return storeError(BACKEND, e, this.connection.target);
  }

  private q(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    return this.connection.query(BACKEND, text, values);
  }
}

const COLUMNS = 'tag, max_id::text AS max_id, step, description, updated_at, fence_epoch, generation::text AS generation';

const BACKEND = 'PostgreSQL store';

/** The ledger's columns as text where they pass 2^53; an ORDER BY names the table's own columns (`l.first_id`), not these text aliases. */
const LEDGER_TEXT =
  'tag, kind, first_id::text AS first_id, last_id::text AS last_id, stride, step, host, pid, instance, version, at_ms::text AS at_ms, fence_epoch, generation::text AS generation';
