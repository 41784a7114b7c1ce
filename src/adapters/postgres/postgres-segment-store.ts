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
import pg from 'pg';
import { InvalidArgumentError, TagExistsError, TagNotFoundError } from '../../core/errors.js';
import { MAX_ID } from '../../core/id.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, DEFAULT_START, DEFAULT_STEP } from '../../ports/segment-store.js';
import { exhausted } from '../memory/memory-segment-store.js';
import { positiveSetting, storeError, storeTarget, tagInfoFromTextRow } from '../store-errors.js';

export const TABLE_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;
export const DEFAULT_TABLE = 'sequoia_alloc';
const SCHEMA_VERSION = 1;
/** Key of the advisory lock that serialises schema migrations ("SEQU"). */
const MIGRATION_LOCK_KEY = 0x53455155;

/** The part of a `pg.Pool` this store calls. */
export interface PgPoolLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  connect(): Promise<PgClientLike>;
  end(): Promise<void>;
}
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  release(err?: Error | boolean): void;
}

export interface PostgresSegmentStoreOptions {
  /** `postgres://user:pass@host:port/db`. Ignored when `pool` is given. */
  readonly connectionString?: string;
  /** A pool made by the caller (it then owns the pool's settings; `close()` still ends it). */
  readonly pool?: PgPoolLike;
  /** Table name; default `sequoia_alloc`. Must match /^[a-z_][a-z0-9_]{0,62}$/. */
  readonly table?: string;
  /** Default 10. */
  readonly maxConnections?: number;
  /** How long to wait for a connection, ms. Default 3000. */
  readonly connectTimeoutMs?: number;
  /** Server-side statement timeout and client-side query timeout, ms. Default 5000. */
  readonly queryTimeoutMs?: number;
  /** Idle connections are closed after this, ms. Default 30000. */
  readonly idleTimeoutMs?: number;
  /** Called with errors of idle clients (server restart, network cut). Default: ignored. */
  readonly onPoolError?: (err: Error) => void;
}

interface RowText {
  tag: string;
  max_id: string;
  step: number;
  description: string;
  updated_at: Date;
  fence_epoch: number;
}

export class PostgresSegmentStore implements SegmentStore {
  readonly kind = 'postgres';
  readonly table: string;
  private readonly pool: PgPoolLike;
  /** host:port, database: named in every store error. */
  private readonly target: string | undefined;
  private initialised = false;

  constructor(options: PostgresSegmentStoreOptions) {
    this.target = storeTarget(options.connectionString, 5432);
    this.table = options.table ?? DEFAULT_TABLE;
    if (!TABLE_NAME_PATTERN.test(this.table)) {
      throw new InvalidArgumentError(`store: table must match ${TABLE_NAME_PATTERN.source}`);
    }
    if (options.pool) {
      this.pool = options.pool;
      return;
    }
    if (!options.connectionString) throw new InvalidArgumentError('store: a PostgreSQL connection string or pool is required');
    const queryTimeout = positiveSetting(options.queryTimeoutMs ?? 5000, 'queryTimeoutMs');
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: positiveSetting(options.maxConnections ?? 10, 'maxConnections'),
      connectionTimeoutMillis: positiveSetting(options.connectTimeoutMs ?? 3000, 'connectTimeoutMs'),
      idleTimeoutMillis: positiveSetting(options.idleTimeoutMs ?? 30_000, 'idleTimeoutMs'),
      statement_timeout: queryTimeout,
      query_timeout: queryTimeout + 1000,
      idle_in_transaction_session_timeout: queryTimeout * 2,
      keepAlive: true,
    });
    const onError = options.onPoolError ?? (() => {});
    // An idle client whose server went away emits 'error' on the pool; without
    // a listener Node would throw it and kill the process.
    pool.on('error', onError);
    this.pool = pool as unknown as PgPoolLike;
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    const t = this.table;
    let client: PgClientLike;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw wrap(e, this.target);
    }
    let failed: unknown;
    try {
      await client.query('BEGIN');
      // Several processes may start at once: CREATE TABLE IF NOT EXISTS alone
      // can still race on the catalog, so migrations run one at a time.
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS sequoia_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)`,
      );
      const r = await client.query('SELECT version FROM sequoia_schema WHERE component = $1', [t]);
      const version = (r.rows[0] as { version: number } | undefined)?.version ?? 0;
      if (version < 1) {
        await client.query(`CREATE TABLE IF NOT EXISTS ${t} (
          tag TEXT PRIMARY KEY,
          max_id BIGINT NOT NULL CHECK (max_id >= 0),
          step INTEGER NOT NULL CHECK (step > 0),
          description TEXT NOT NULL DEFAULT '',
          updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
          fence_epoch INTEGER NOT NULL DEFAULT 0
        )`);
      }
      await client.query(
        `INSERT INTO sequoia_schema (component, version) VALUES ($1, $2)
         ON CONFLICT (component) DO UPDATE SET version = GREATEST(sequoia_schema.version, EXCLUDED.version)`,
        [t, SCHEMA_VERSION],
      );
      await client.query('COMMIT');
    } catch (e) {
      failed = e;
      await client.query('ROLLBACK').catch(() => {});
    } finally {
      client.release(failed instanceof Error ? failed : undefined);
    }
    if (failed !== undefined) throw wrap(failed, this.target);
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    const r = await this.q(
      `UPDATE ${this.table}
         SET max_id = max_id + COALESCE($2::integer, step), updated_at = now()
       WHERE tag = $1 AND max_id <= 9223372036854775807 - COALESCE($2::integer, step)
       RETURNING max_id::text AS max_id, step, fence_epoch, COALESCE($2::integer, step) AS applied`,
      [tag, step ?? null],
    );
    const row = r.rows[0] as { max_id: string; step: number; fence_epoch: number; applied: number } | undefined;
    if (row) {
      return { maxId: BigInt(row.max_id), step: row.applied, storedStep: row.step, fenceEpoch: row.fence_epoch };
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
    if (start < 0n || start > MAX_ID) throw new InvalidArgumentError('start must be from 0 to 2^63-1');
    try {
      const r = await this.pool.query(
        `INSERT INTO ${this.table} (tag, max_id, step, description, updated_at, fence_epoch)
         VALUES ($1, $2::bigint, $3, $4, now(), 0) RETURNING ${COLUMNS}`,
        [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? ''],
      );
      return tagInfoFromTextRow(r.rows[0] as RowText);
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw new TagExistsError(t.tag);
      throw wrap(e, this.target);
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
    if (to < 0n || to > MAX_ID) throw new InvalidArgumentError('to must be from 0 to 2^63-1');
    const r = await this.q(
      `UPDATE ${this.table}
         SET max_id = GREATEST(max_id, $2::bigint), fence_epoch = fence_epoch + 1, updated_at = now()
       WHERE tag = $1 RETURNING ${COLUMNS}`,
      [tag, to.toString()],
    );
    const row = r.rows[0] as RowText | undefined;
    if (!row) throw new TagNotFoundError(tag);
    return tagInfoFromTextRow(row);
  }

  async giveBack(tag: string, expectedMaxId: bigint, newMaxId: bigint, expectedFenceEpoch?: number): Promise<boolean> {
    assertGiveBack(expectedMaxId, newMaxId);
    // One statement: the row lock makes the compare and the set atomic.
    const r = await this.q(
      `UPDATE ${this.table} SET max_id = $3::bigint, updated_at = now()
       WHERE tag = $1 AND max_id = $2::bigint AND ($4::bigint IS NULL OR fence_epoch = $4::bigint)`,
      [tag, expectedMaxId.toString(), newMaxId.toString(), expectedFenceEpoch === undefined ? null : String(expectedFenceEpoch)],
    );
    return r.rowCount === 1;
  }

  async ping(): Promise<void> {
    await this.q('SELECT 1');
  }

  async close(): Promise<void> {
    try {
      await this.pool.end();
    } catch {
      // ending twice, or a pool already broken: nothing left to release
    }
  }

  private async q(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    try {
      return await this.pool.query(text, values);
    } catch (e) {
      throw wrap(e, this.target);
    }
  }
}

const COLUMNS = 'tag, max_id::text AS max_id, step, description, updated_at, fence_epoch';

const wrap = (e: unknown, target: string | undefined) => storeError('PostgreSQL store', e, target);
