/**
 * SegmentStore on MySQL 8 or MariaDB 10.11+ (`mysql2`). As Leaf does, an
 * allocation is one transaction on one connection:
 *
 *   BEGIN
 *   UPDATE <table> SET max_id = max_id + s WHERE tag = ? AND max_id <= 2^63-1 - s
 *   SELECT max_id, step, fence_epoch FROM <table> WHERE tag = ?      -- read-back
 *   COMMIT
 *
 * InnoDB's row lock, taken by the UPDATE and held to COMMIT, makes the pair
 * atomic against every other allocator; the read-back sees this transaction's
 * own write. The overflow check is in the UPDATE's WHERE clause, i.e. before
 * anything is written: max_id never passes 2^63-1. When the UPDATE matches no
 * row, the read-back tells TAG_NOT_FOUND from ID_SPACE_EXHAUSTED.
 *
 * BIGINT never becomes a lossy JS number: the pool runs with supportBigNumbers
 * and bigNumberStrings, and values go out as decimal strings. Tags are stored
 * in a binary collation (`utf8mb4_bin`): `Tag` and `tag` are two tags, as in
 * every other store. The only interpolated name, the table, is checked against
 * /^[a-z_][a-z0-9_]{0,62}$/; all values are placeholders.
 */
import mysql from 'mysql2/promise';
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { InvalidArgumentError, SequoiaError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import { MAX_ID } from '../../core/id.js';
import type { Allocation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, DEFAULT_START, DEFAULT_STEP } from '../../ports/segment-store.js';
import { exhausted } from '../memory/memory-segment-store.js';
import { DEFAULT_TABLE, TABLE_NAME_PATTERN } from '../postgres/postgres-segment-store.js';
import { positiveSetting, storeError, storeTarget, tagInfoFromTextRow } from '../store-errors.js';

export interface MysqlSegmentStoreOptions {
  /** `mysql://user:pass@host:port/db`. */
  readonly uri: string;
  /** Table name; default `sequoia_alloc`. Must match /^[a-z_][a-z0-9_]{0,62}$/. */
  readonly table?: string;
  /** Default 10. */
  readonly maxConnections?: number;
  /** How long to wait for a new connection, ms. Default 3000. */
  readonly connectTimeoutMs?: number;
  /** Per-query timeout, ms. Default 5000. */
  readonly queryTimeoutMs?: number;
  /** Idle connections are closed after this, ms. Default 30000. */
  readonly idleTimeoutMs?: number;
}

interface Row extends RowDataPacket {
  tag: string;
  max_id: string;
  step: number | string;
  description: string;
  updated_at: Date;
  fence_epoch: number | string;
}

const SCHEMA_VERSION = 1;
const COLUMNS = 'tag, max_id, step, description, updated_at, fence_epoch';

export class MysqlSegmentStore implements SegmentStore {
  readonly kind = 'mysql';
  readonly table: string;
  private readonly pool: Pool;
  /** host:port, database: named in every store error. */
  private readonly target: string | undefined;
  private readonly timeout: number;
  private initialised = false;

  constructor(options: MysqlSegmentStoreOptions) {
    this.target = storeTarget(options.uri, 3306);
    this.table = options.table ?? DEFAULT_TABLE;
    if (!TABLE_NAME_PATTERN.test(this.table)) {
      throw new InvalidArgumentError(`store: table must match ${TABLE_NAME_PATTERN.source}`);
    }
    this.timeout = positiveSetting(options.queryTimeoutMs ?? 5000, 'queryTimeoutMs');
    this.pool = mysql.createPool({
      uri: options.uri,
      connectionLimit: positiveSetting(options.maxConnections ?? 10, 'maxConnections'),
      maxIdle: positiveSetting(options.maxConnections ?? 10, 'maxConnections'),
      idleTimeout: positiveSetting(options.idleTimeoutMs ?? 30_000, 'idleTimeoutMs'),
      connectTimeout: positiveSetting(options.connectTimeoutMs ?? 3000, 'connectTimeoutMs'),
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
      enableKeepAlive: true,
      waitForConnections: true,
      // Matched rows, not changed rows: an UPDATE that writes the same values still counts.
      flags: ['FOUND_ROWS'],
    });
    // A pooled connection that dies while idle emits 'error'; without a
    // listener Node would throw it and kill the process. The pool drops it.
    // (mysql2 passes the core connection here, whatever the promise typings say.)
    this.pool.on('connection', (conn) => {
      const target = ((conn as { connection?: unknown }).connection ?? conn) as { on?: (e: string, f: () => void) => void };
      target.on?.('error', () => {});
    });
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    const t = this.table;
    await this.withConnection(async (c) => {
      // Several processes may start at once: migrations run under a named lock.
      const [lock] = await c.query<RowDataPacket[]>({ sql: 'SELECT GET_LOCK(?, ?) AS got', timeout: this.timeout + 10_000 }, [
        'sequoia_schema',
        10,
      ]);
      if (Number(lock[0]?.got) !== 1) {
        throw new UnavailableError('STORE_UNAVAILABLE', 'MySQL store: could not take the schema migration lock', {
          retryAfterMs: 1000,
        });
      }
      try {
        await this.run(
          c,
          `CREATE TABLE IF NOT EXISTS sequoia_schema (
            component VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
            version INT NOT NULL
          ) ENGINE=InnoDB`,
        );
        const [rows] = await c.query<RowDataPacket[]>({ sql: 'SELECT version FROM sequoia_schema WHERE component = ?', timeout: this.timeout }, [t]);
        const version = rows[0] ? Number(rows[0].version) : 0;
        if (version < 1) {
          await this.run(
            c,
            `CREATE TABLE IF NOT EXISTS ${t} (
              tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
              max_id BIGINT NOT NULL,
              step INT NOT NULL,
              description TEXT NOT NULL,
              updated_at DATETIME(3) NOT NULL,
              fence_epoch INT NOT NULL DEFAULT 0
            ) ENGINE=InnoDB`,
          );
        }
        await this.run(
          c,
          `INSERT INTO sequoia_schema (component, version) VALUES (?, ?)
           ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))`,
          [t, SCHEMA_VERSION],
        );
      } finally {
        await c.query('SELECT RELEASE_LOCK(?)', ['sequoia_schema']).catch(() => {});
      }
    });
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    const s = step ?? null;
    return this.withConnection(async (c) => {
      await this.run(c, 'START TRANSACTION');
      try {
        const upd = (await this.run(
          c,
          `UPDATE ${this.table}
             SET max_id = max_id + COALESCE(?, step), updated_at = UTC_TIMESTAMP(3)
           WHERE tag = ? AND max_id <= 9223372036854775807 - COALESCE(?, step)`,
          [s, tag, s],
        )) as ResultSetHeader;
        const [rows] = await c.query<Row[]>(
          { sql: `SELECT ${COLUMNS} FROM ${this.table} WHERE tag = ?`, timeout: this.timeout },
          [tag],
        );
        await this.run(c, 'COMMIT');
        const row = rows[0];
        if (!row) throw new TagNotFoundError(tag);
        if (upd.affectedRows !== 1) throw exhausted(tag);
        const storedStep = Number(row.step);
        return { maxId: BigInt(row.max_id), step: step ?? storedStep, storedStep, fenceEpoch: Number(row.fence_epoch) };
      } catch (e) {
        await c.query('ROLLBACK').catch(() => {});
        throw e;
      }
    });
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const rows = await this.select(`SELECT ${COLUMNS} FROM ${this.table} WHERE tag = ?`, [tag]);
    return rows[0] ? tagInfoFromTextRow(rows[0]) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const rows = await this.select(`SELECT ${COLUMNS} FROM ${this.table} ORDER BY tag`);
    return rows.map(tagInfoFromTextRow);
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    if (start < 0n || start > MAX_ID) throw new InvalidArgumentError('start must be from 0 to 2^63-1');
    try {
      await this.pool.query({
        sql: `INSERT INTO ${this.table} (tag, max_id, step, description, updated_at, fence_epoch)
              VALUES (?, CAST(? AS SIGNED), ?, ?, UTC_TIMESTAMP(3), 0)`,
        values: [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? ''],
        timeout: this.timeout,
      });
    } catch (e) {
      if ((e as { code?: string }).code === 'ER_DUP_ENTRY') throw new TagExistsError(t.tag);
      throw wrap(e, this.target);
    }
    return this.mustGet(t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const r = await this.exec(
      `UPDATE ${this.table}
         SET step = COALESCE(?, step), description = COALESCE(?, description), updated_at = UTC_TIMESTAMP(3)
       WHERE tag = ?`,
      [update.step ?? null, update.description ?? null, tag],
    );
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
    return this.mustGet(tag);
  }

  async deleteTag(tag: string): Promise<void> {
    const r = await this.exec(`DELETE FROM ${this.table} WHERE tag = ?`, [tag]);
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    if (to < 0n || to > MAX_ID) throw new InvalidArgumentError('to must be from 0 to 2^63-1');
    const r = await this.exec(
      `UPDATE ${this.table}
         SET max_id = GREATEST(max_id, CAST(? AS SIGNED)), fence_epoch = fence_epoch + 1, updated_at = UTC_TIMESTAMP(3)
       WHERE tag = ?`,
      [to.toString(), tag],
    );
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
    return this.mustGet(tag);
  }

  async giveBack(tag: string, expectedMaxId: bigint, newMaxId: bigint, expectedFenceEpoch?: number): Promise<boolean> {
    assertGiveBack(expectedMaxId, newMaxId);
    // One statement (InnoDB row lock): compare and set at once. FOUND_ROWS
    // counts a matched row even when the value is unchanged (new == expected).
    const r = await this.exec(
      `UPDATE ${this.table} SET max_id = CAST(? AS SIGNED), updated_at = UTC_TIMESTAMP(3)
       WHERE tag = ? AND max_id = CAST(? AS SIGNED) AND (? IS NULL OR fence_epoch = ?)`,
      [
        newMaxId.toString(),
        tag,
        expectedMaxId.toString(),
        expectedFenceEpoch ?? null,
        expectedFenceEpoch ?? null,
      ],
    );
    return r.affectedRows === 1;
  }

  async ping(): Promise<void> {
    await this.select('SELECT 1 AS one');
  }

  async close(): Promise<void> {
    try {
      await this.pool.end();
    } catch {
      // already ended
    }
  }

  private async mustGet(tag: string): Promise<TagInfo> {
    const info = await this.getTag(tag);
    if (!info) throw new TagNotFoundError(tag);
    return info;
  }

  private async select(sql: string, values?: unknown[]): Promise<Row[]> {
    try {
      const [rows] = await this.pool.query<Row[]>({ sql, values, timeout: this.timeout });
      return rows;
    } catch (e) {
      throw wrap(e, this.target);
    }
  }

  private async exec(sql: string, values?: unknown[]): Promise<ResultSetHeader> {
    try {
      const [r] = await this.pool.query<ResultSetHeader>({ sql, values, timeout: this.timeout });
      return r;
    } catch (e) {
      throw wrap(e, this.target);
    }
  }

  private async run(c: PoolConnection, sql: string, values?: unknown[]): Promise<unknown> {
    const [r] = await c.query({ sql, values, timeout: this.timeout });
    return r;
  }

  /** Runs `fn` on one pooled connection; a connection that failed is destroyed, not reused. */
  private async withConnection<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    let c: PoolConnection;
    try {
      c = await this.pool.getConnection();
    } catch (e) {
      throw wrap(e, this.target);
    }
    try {
      const r = await fn(c);
      c.release();
      return r;
    } catch (e) {
      if (e instanceof SequoiaError) c.release();
      else c.destroy();
      throw wrap(e, this.target);
    }
  }
}

const wrap = (e: unknown, target: string | undefined) => storeError('MySQL store', e, target);
