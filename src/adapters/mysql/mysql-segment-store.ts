/**
 * SegmentStore on MySQL 8 or MariaDB 10.11+ (`mysql2`): the SQL store
 * (kit/sql/sql-segment-store.ts) over MySQL's statements. As Leaf's, an
 * allocation is one transaction, here sent in one round trip: START
 * TRANSACTION; the UPDATE whose WHERE holds the overflow check (max_id never
 * passes 2^63-1; a refused allocation records no range); its ROW_COUNT();
 * the ledger row; the read-back; COMMIT.
 *
 * BIGINT never becomes a lossy JS number: the pool runs with supportBigNumbers
 * and bigNumberStrings, and values go out as decimal strings. Tags are stored
 * in a binary collation (`utf8mb4_bin`): `Tag` and `tag` are two tags, as in
 * every other store. The only interpolated name, the table, is checked against
 * /^[a-z_][a-z0-9_]{0,62}$/; all values are placeholders.
 */
import type { Pool } from 'mysql2/promise';
import type { ServerIdentity } from '../../ports/range-ledger.js';
import {
  allocationRecordSql,
  LEDGER_COLUMNS,
  ledgerDdl,
  ledgerPlace,
  type LedgerPlace,
  ledgerTopSql,
  recordSql,
} from '../kit/segment/range-ledger.js';
import { overPool } from '../kit/sql/sql-database.js';
import { type SegmentStatements, SqlSegmentStore } from '../kit/sql/sql-segment-store.js';
import { MysqlPool, type MysqlStoreOptions } from './mysql-connection.js';

export interface MysqlSegmentStoreOptions extends MysqlStoreOptions {
  /** Table name; default `sequoia_alloc`. Must match /^[a-z_][a-z0-9_]{0,62}$/. */
  readonly table?: string;
  /** Who takes ranges, for the ledger. Default: this process. */
  readonly identity?: ServerIdentity;
  /** False only in the benchmark that measures the ledger's cost; never from a URL. */
  readonly recordLedger?: boolean;
}

/** 1: the table; 2: its `generation` column (see TagInfo.generation); 3: the range ledger beside it. */
const SCHEMA_VERSION = 3;

export class MysqlSegmentStore extends SqlSegmentStore {
  /** The shared pool (the lease store of the same URL holds the same one). */
  private readonly pool: Pool;

  constructor(options: MysqlSegmentStoreOptions) {
    const place = ledgerPlace(options);
    const pool = new MysqlPool(options, 'MySQL store');
    const recording = options.recordLedger ?? true;
    const sql = mysqlStatements(place);
    super({ kind: 'mysql', table: place.table, sql, db: overPool(pool), who: place.who, recording, duplicate: 'ER_DUP_ENTRY' });
    this.pool = pool.connection.pool;
  }
}

const COLUMNS = 'tag, max_id, step, description, updated_at, fence_epoch, generation';
const BIN = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL';
const NOW_MS = 'ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)';
const big = (p: string) => `CAST(${p} AS SIGNED)`;

function mysqlStatements({ table: t, ledger }: LedgerPlace): SegmentStatements {
  const step = 'COALESCE($2, step)';
  return {
    *migrate() {
      yield [`CREATE TABLE IF NOT EXISTS sequoia_schema (component VARCHAR(128) ${BIN} PRIMARY KEY, version INT NOT NULL) ENGINE=InnoDB`];
      const [row] = (yield ['SELECT version FROM sequoia_schema WHERE component = $1', [t]]).rows as { version: number }[];
      const version = Number(row?.version ?? 0);
      if (version < 1) {
        yield [
          `CREATE TABLE IF NOT EXISTS ${t} (
            tag VARCHAR(128) ${BIN} PRIMARY KEY,
            max_id BIGINT NOT NULL,
            step INT NOT NULL,
            description TEXT NOT NULL,
            updated_at DATETIME(3) NOT NULL,
            fence_epoch INT NOT NULL DEFAULT 0,
            generation BIGINT NOT NULL DEFAULT 0
          ) ENGINE=InnoDB`,
        ];
      }
      // Under the migration's named lock. MySQL 8 has no ADD COLUMN IF NOT EXISTS: look first.
      const has = `SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = $1 AND COLUMN_NAME = 'generation'`;
      if (version < 2 && (yield [has, [t]]).rows.length === 0) yield [`ALTER TABLE ${t} ADD COLUMN generation BIGINT NOT NULL DEFAULT 0`];
      for (const ddl of ledgerDdl(ledger, 'mysql')) yield [ddl];
      const record =
        'INSERT INTO sequoia_schema (component, version) VALUES ($1, $2) ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))';
      yield [record, [t, SCHEMA_VERSION]];
    },
    // One round trip (a strict tag waits for it on every batch). InnoDB's row lock, taken by the UPDATE and held to
    // COMMIT, makes the write, its ledger row and the read-back atomic; the read-back sees this transaction's write.
    allocate: [
      `UPDATE ${t} SET max_id = max_id + ${step}, updated_at = UTC_TIMESTAMP(3) WHERE tag = $1 AND max_id <= 9223372036854775807 - ${step}`,
      'SET @sequoia_allocated = ROW_COUNT()',
      allocationRecordSql(ledger, NOW_MS, {
        first: `max_id - ${step}`,
        last: 'max_id - 1',
        step,
        from: `${t} WHERE tag = $1 AND @sequoia_allocated = 1 AND $7`,
      }),
      `SELECT max_id, step, fence_epoch, generation, ${step} AS applied FROM ${t} WHERE tag = $1 AND @sequoia_allocated = 1`,
    ],
    get: `SELECT ${COLUMNS} FROM ${t} WHERE tag = $1`,
    list: `SELECT ${COLUMNS} FROM ${t} ORDER BY tag`,
    create: `INSERT INTO ${t} (tag, max_id, step, description, updated_at, fence_epoch, generation)
      VALUES ($1, ${big('$2')}, $3, $4, UTC_TIMESTAMP(3), 0, ${big('$5')})`,
    update: `UPDATE ${t} SET step = COALESCE($2, step), description = COALESCE($3, description), updated_at = UTC_TIMESTAMP(3) WHERE tag = $1`,
    remove: `DELETE FROM ${t} WHERE tag = $1`,
    lock: `SELECT max_id FROM ${t} WHERE tag = $1 FOR UPDATE`,
    fence: `UPDATE ${t} SET max_id = GREATEST(max_id, ${big('$2')}), fence_epoch = fence_epoch + 1, updated_at = UTC_TIMESTAMP(3) WHERE tag = $1`,
    giveBack: `UPDATE ${t} SET max_id = ${big('$3')}, updated_at = UTC_TIMESTAMP(3)
      WHERE tag = $1 AND max_id = ${big('$2')} AND fence_epoch = $4 AND generation = ${big('$5')}`,
    record: recordSql(ledger, NOW_MS, big),
    ranges: `SELECT ${LEDGER_COLUMNS} FROM ${ledger} WHERE tag = $1 AND first_id <= ${big('$2')} AND last_id >= ${big('$3')} ORDER BY at_ms, first_id`,
    entries: `SELECT ${LEDGER_COLUMNS} FROM ${ledger} WHERE tag = $1 ORDER BY first_id, at_ms`,
    page: {
      select: `SELECT ${LEDGER_COLUMNS} FROM ${ledger} WHERE tag = $1 AND`,
      from: `first_id >= ${big('$2')} ORDER BY first_id LIMIT $3`,
      at: `first_id = ${big('$2')}`,
    },
    top: ledgerTopSql(ledger, 'CHAR'),
    prune: `DELETE FROM ${ledger} WHERE at_ms < ${big('$1')} ORDER BY at_ms LIMIT $2`,
  };
}
