/**
 * SegmentStore on MySQL 8 or MariaDB 10.11+ (`mysql2`). As Leaf does, an
 * allocation is one transaction on one connection, here sent in one round
 * trip (a strict tag waits for it on every batch):
 *
 *   START TRANSACTION;
 *   UPDATE <table> SET max_id = max_id + s WHERE tag = ? AND max_id <= 2^63-1 - s;
 *   SET @sequoia_allocated = ROW_COUNT();
 *   INSERT INTO <ledger> SELECT …the range… FROM <table> WHERE tag = ? AND @sequoia_allocated = 1;
 *   SELECT @sequoia_allocated, max_id, step, fence_epoch … FROM <table> WHERE tag = ?;   -- read-back
 *   COMMIT
 *
 * InnoDB's row lock, taken by the UPDATE and held to COMMIT, makes the write,
 * its ledger row and the read-back atomic against every other allocator; the
 * read-back sees this transaction's own write. The overflow check is in the
 * UPDATE's WHERE clause, i.e. before anything is written: max_id never passes
 * 2^63-1, and a refused allocation records no range. When the UPDATE matches
 * no row, the read-back tells TAG_NOT_FOUND from ID_SPACE_EXHAUSTED.
 *
 * BIGINT never becomes a lossy JS number: the pool runs with supportBigNumbers
 * and bigNumberStrings, and values go out as decimal strings. Tags are stored
 * in a binary collation (`utf8mb4_bin`): `Tag` and `tag` are two tags, as in
 * every other store. The only interpolated name, the table, is checked against
 * /^[a-z_][a-z0-9_]{0,62}$/; all values are placeholders.
 */
import type { PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { tagInfoFromTextRow } from '../kit/store-boundary.js';
import { MysqlStatements, type MysqlStoreOptions } from './mysql-connection.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, newGeneration, readBack } from '../kit/segment-rules.js';
import type { LedgerEntry, LedgerPage, LedgerTop, ServerIdentity } from '../../ports/range-ledger.js';
import {
  entryFromRow,
  fencedRange,
  givenBackRange,
  identityValues,
  LEDGER_COLUMNS,
  ledgerPlace,
  type LedgerRowText,
  sqlLedgerPage,
  ledgerRowFor,
  ledgerTopFromRow,
  ledgerTopSql,
} from '../kit/range-ledger.js';

export interface MysqlSegmentStoreOptions extends MysqlStoreOptions {
  /** Table name; default `sequoia_alloc`. Must match /^[a-z_][a-z0-9_]{0,62}$/. */
  readonly table?: string;
  /** Who takes ranges, for the ledger. Default: this process. */
  readonly identity?: ServerIdentity;
}

interface Row extends RowDataPacket {
  tag: string;
  max_id: string;
  step: number | string;
  description: string;
  updated_at: Date;
  fence_epoch: number | string;
  generation: string;
}

/** 1: the table; 2: its `generation` column (see TagInfo.generation); 3: the range ledger beside it. */
const SCHEMA_VERSION = 3;
const COLUMNS = 'tag, max_id, step, description, updated_at, fence_epoch, generation';

export class MysqlSegmentStore implements SegmentStore {
  readonly kind = 'mysql';
  readonly table: string;
  private readonly ledger: string;
  private readonly who: ServerIdentity;
  private readonly db: MysqlStatements;
  private closed = false;
  private initialised = false;

  constructor(options: MysqlSegmentStoreOptions) {
    ({ table: this.table, ledger: this.ledger, who: this.who } = ledgerPlace(options));
    this.db = new MysqlStatements(options, BACKEND);
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    const t = this.table;
    await this.db.withConnection(async (c) => {
      // Several processes may start at once: migrations run under a named lock.
      const [lock] = await c.query<RowDataPacket[]>({ sql: 'SELECT GET_LOCK(?, ?) AS got', timeout: this.db.timeout + 10_000 }, [
        'sequoia_schema',
        10,
      ]);
      if (Number(lock[0]?.got) !== 1) {
        throw new UnavailableError('STORE_UNAVAILABLE', 'MySQL store: could not take the schema migration lock', {
          retryAfterMs: 1000,
        });
      }
      try {
        await this.db.run(
          c,
          `CREATE TABLE IF NOT EXISTS sequoia_schema (
            component VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
            version INT NOT NULL
          ) ENGINE=InnoDB`,
        );
        const rows = await this.db.rows(c, 'SELECT version FROM sequoia_schema WHERE component = ?', [t]);
        const version = rows[0] ? Number(rows[0].version) : 0;
        if (version < 1) {
          await this.db.run(
            c,
            `CREATE TABLE IF NOT EXISTS ${t} (
              tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
              max_id BIGINT NOT NULL,
              step INT NOT NULL,
              description TEXT NOT NULL,
              updated_at DATETIME(3) NOT NULL,
              fence_epoch INT NOT NULL DEFAULT 0,
              generation BIGINT NOT NULL DEFAULT 0
            ) ENGINE=InnoDB`,
          );
        }
        if (version < 2) {
          // Under the same named lock. MySQL 8 has no ADD COLUMN IF NOT EXISTS: look first.
          const cols = await this.db.rows(
            c,
            `SELECT COUNT(*) AS n FROM information_schema.COLUMNS
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'generation'`,
            [t],
          );
          if (Number(cols[0]?.n) === 0) await this.db.run(c, `ALTER TABLE ${t} ADD COLUMN generation BIGINT NOT NULL DEFAULT 0`);
        }
        await this.db.run(
          c,
          `CREATE TABLE IF NOT EXISTS ${this.ledger} (
            tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            kind VARCHAR(16) NOT NULL,
            first_id BIGINT NOT NULL,
            last_id BIGINT NOT NULL,
            stride INT NOT NULL,
            step INT NOT NULL,
            host VARCHAR(255) NOT NULL,
            pid INT NOT NULL,
            instance VARCHAR(64) NOT NULL,
            version VARCHAR(64) NOT NULL,
            at_ms BIGINT NOT NULL,
            fence_epoch INT NOT NULL,
            generation BIGINT NOT NULL,
            KEY tag_first (tag, first_id),
            KEY at_ms (at_ms)
          ) ENGINE=InnoDB`,
        );
        await this.db.run(
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
    // One round trip (a strict tag waits for it on every batch): the statements of the transaction go together.
    const results = (await this.db.multi(
      `START TRANSACTION;
       UPDATE ${this.table}
          SET max_id = max_id + COALESCE(?, step), updated_at = UTC_TIMESTAMP(3)
        WHERE tag = ? AND max_id <= 9223372036854775807 - COALESCE(?, step);
       SET @sequoia_allocated = ROW_COUNT();
       INSERT INTO ${this.ledger} (${LEDGER_COLUMNS})
       SELECT tag, 'allocate', max_id - COALESCE(?, step), max_id - 1, 1, COALESCE(?, step), ?, ?, ?, ?,
              ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000), fence_epoch, generation
         FROM ${this.table} WHERE tag = ? AND @sequoia_allocated = 1;
       SELECT @sequoia_allocated AS allocated, ${COLUMNS} FROM ${this.table} WHERE tag = ?;
       COMMIT`,
      [s, tag, s, s, s, ...identityValues(this.who), tag, tag],
    )) as unknown[];
    const row = (results[4] as Array<Row & { allocated: number | string | null }>)[0];
    if (!row) throw new TagNotFoundError(tag);
    if (Number(row.allocated) !== 1) throw exhausted(tag);
    const storedStep = Number(row.step);
    return {
      maxId: BigInt(row.max_id),
      step: step ?? storedStep,
      storedStep,
      fenceEpoch: Number(row.fence_epoch),
      generation: String(row.generation),
    };
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const rows = await this.db.select<Row>(`SELECT ${COLUMNS} FROM ${this.table} WHERE tag = ?`, [tag]);
    return rows[0] ? tagInfoFromTextRow(rows[0]) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const rows = await this.db.select<Row>(`SELECT ${COLUMNS} FROM ${this.table} ORDER BY tag`);
    return rows.map(tagInfoFromTextRow);
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    await this.db.withConnection(async (c) => {
      try {
        await this.db.run(
          c,
          `INSERT INTO ${this.table} (tag, max_id, step, description, updated_at, fence_epoch, generation)
           VALUES (?, CAST(? AS SIGNED), ?, ?, UTC_TIMESTAMP(3), 0, CAST(? AS SIGNED))`,
          [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? '', newGeneration()],
        );
      } catch (e) {
        if ((e as { code?: string }).code === 'ER_DUP_ENTRY') throw new TagExistsError(t.tag);
        throw e;
      }
    });
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const r = await this.db.exec(
      `UPDATE ${this.table}
         SET step = COALESCE(?, step), description = COALESCE(?, description), updated_at = UTC_TIMESTAMP(3)
       WHERE tag = ?`,
      [update.step ?? null, update.description ?? null, tag],
    );
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async deleteTag(tag: string): Promise<void> {
    const r = await this.db.exec(`DELETE FROM ${this.table} WHERE tag = ?`, [tag]);
    if (r.affectedRows === 0) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    const found = await this.db.transaction(async (c) => {
      const [before] = await this.db.rows<Row>(c, `SELECT max_id FROM ${this.table} WHERE tag = ? FOR UPDATE`, [tag]);
      if (!before) return false;
      await this.db.run(
        c,
        `UPDATE ${this.table}
           SET max_id = GREATEST(max_id, CAST(? AS SIGNED)), fence_epoch = fence_epoch + 1, updated_at = UTC_TIMESTAMP(3)
         WHERE tag = ?`,
        [to.toString(), tag],
      );
      const jumped = fencedRange(BigInt(before.max_id), to);
      if (jumped) {
        const row = (await this.rowOn(c, tag)) as Row;
        await this.recordOn(c, ledgerRowFor(tag, 'fence', jumped, this.who, 0, row));
      }
      return true;
    });
    if (!found) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    // One transaction (InnoDB row lock): compare and set at once, with the ledger row.
    return this.db.transaction(async (c) => {
      const r = (await this.db.run(
        c,
        `UPDATE ${this.table} SET max_id = CAST(? AS SIGNED), updated_at = UTC_TIMESTAMP(3)
         WHERE tag = ? AND max_id = CAST(? AS SIGNED) AND fence_epoch = ? AND generation = CAST(? AS SIGNED)`,
        [from.toString(), tag, expect.maxId.toString(), expect.fenceEpoch, expect.generation],
      )) as ResultSetHeader;
      const range = givenBackRange(from, expect);
      if (r.affectedRows === 1 && range) {
        const row = (await this.rowOn(c, tag)) as Row;
        await this.recordOn(c, ledgerRowFor(tag, 'give-back', range, this.who, 0, row));
      }
      return r.affectedRows === 1;
    });
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    const rows = await this.db.select<Row>(
      `SELECT ${LEDGER_COLUMNS} FROM ${this.ledger} WHERE tag = ? AND first_id <= CAST(? AS SIGNED) AND last_id >= CAST(? AS SIGNED) ORDER BY at_ms, first_id`,
      [tag, id.toString(), id.toString()],
    );
    return (rows as unknown as LedgerRowText[]).map(entryFromRow);
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    const rows = await this.db.select<Row>(`SELECT ${LEDGER_COLUMNS} FROM ${this.ledger} WHERE tag = ? ORDER BY first_id, at_ms`, [tag]);
    return (rows as unknown as LedgerRowText[]).map(entryFromRow);
  }

  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    return sqlLedgerPage(
      cursor,
      limit,
      { from: 'first_id >= CAST(? AS SIGNED) ORDER BY first_id LIMIT ?', at: 'first_id = CAST(? AS SIGNED)' },
      (where, args) => this.db.select<Row>(`SELECT ${LEDGER_COLUMNS} FROM ${this.ledger} WHERE tag = ? AND ${where}`, [tag, ...args]),
    );
  }

  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    const rows = await this.db.select<Row>(ledgerTopSql(this.ledger, 'CHAR'), [tag]);
    return ledgerTopFromRow(rows[0] as unknown as Parameters<typeof ledgerTopFromRow>[0]);
  }

  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    const r = await this.db.exec(`DELETE FROM ${this.ledger} WHERE at_ms < ? ORDER BY at_ms LIMIT ?`, [beforeMs, limit]);
    return r.affectedRows;
  }

  /** The row's time is the database's clock (the `0` placeholder of ledgerRowFor is replaced). */
  private async recordOn(c: PoolConnection, values: unknown[]): Promise<void> {
    const v = [...values];
    v.splice(10, 1);
    await this.db.run(
      c,
      `INSERT INTO ${this.ledger} (${LEDGER_COLUMNS})
       VALUES (?, ?, CAST(? AS SIGNED), CAST(? AS SIGNED), ?, ?, ?, ?, ?, ?, ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000), ?, CAST(? AS SIGNED))`,
      v,
    );
  }

  async ping(): Promise<void> {
    await this.db.select('SELECT 1 AS one');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.release();
  }

  /** The tag's row as this transaction sees it. */
  private async rowOn(c: PoolConnection, tag: string): Promise<Row | undefined> {
    const [row] = await this.db.rows<Row>(c, `SELECT ${COLUMNS} FROM ${this.table} WHERE tag = ?`, [tag]);
    return row;
  }
}

const BACKEND = 'MySQL store';
