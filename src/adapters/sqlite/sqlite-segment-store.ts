/**
 * SegmentStore on an embedded SQLite file (better-sqlite3): the SQL store
 * (kit/sql/sql-segment-store.ts) over SQLite's statements, run synchronously in
 * `BEGIN IMMEDIATE` transactions on the handle shared with the lease store
 * (`SqliteDatabase`, sqlite-connection.ts). Several processes may share one
 * file: WAL lets readers run beside the writer, and writers queue on the file
 * lock. An allocation writes its ledger row from the row before it moves it,
 * both under the same WHERE (the overflow check): two statements, one
 * transaction.
 */
import type { ServerIdentity } from '../../ports/range-ledger.js';
import { allocationRecordSql, LEDGER_COLUMNS, ledgerDdl, ledgerTopSql, processIdentity, recordSql } from '../kit/segment/range-ledger.js';
import { type SegmentStatements, SqlSegmentStore } from '../kit/sql/sql-segment-store.js';
import { SqliteConnection, SqliteDatabase } from './sqlite-connection.js';
import { sqliteLocation } from './sqlite-location.js';

export type SqliteSegmentStoreOptions = (
  | {
      /** File path, or ':memory:'. */
      readonly path: string;
      /** How long a writer waits for another process's lock, ms. Default 2000. */
      readonly busyTimeoutMs?: number;
    }
  /** The handle shared with the lease store of the same URL. */
  | { readonly connection: SqliteConnection }
) & {
  /** Who takes ranges, for the ledger. Default: this process. */
  readonly identity?: ServerIdentity;
  /** False only in the benchmark that measures the ledger's cost (`npm run bench -- ledger`); never from a URL. */
  readonly recordLedger?: boolean;
};

export class SqliteSegmentStore extends SqlSegmentStore {
  /** An own property, so the off-loop proxy carries it too. */
  readonly location: string;

  constructor(options: SqliteSegmentStoreOptions) {
    const connection = 'connection' in options ? options.connection : new SqliteConnection(options);
    super({
      kind: 'sqlite',
      table: 'sequoia_alloc',
      sql: STATEMENTS,
      db: new SqliteDatabase(connection, 'segments', 'SQLite store'),
      who: options.identity ?? processIdentity(),
      recording: options.recordLedger ?? true,
      duplicate: 'SQLITE_CONSTRAINT_PRIMARYKEY',
    });
    this.location = sqliteLocation(connection.path);
  }
}

/** 1: the table; 2: its `generation` column (see TagInfo.generation). The ledger is looked for by name. */
const SCHEMA_VERSION = 2;
const NOW_MS = "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)";
const big = (p: string) => `CAST(${p} AS INTEGER)`;
const STEP = 'COALESCE($2, step)';
const HAS_ROOM = `tag = $1 AND max_id <= 9223372036854775807 - ${STEP}`;

const STATEMENTS: SegmentStatements = {
  *migrate() {
    yield ['CREATE TABLE IF NOT EXISTS sequoia_schema (version INTEGER NOT NULL)'];
    const [row] = (yield ['SELECT version FROM sequoia_schema']).rows as { version: bigint }[];
    if (Number(row?.version ?? 0) < 1) {
      yield [
        `CREATE TABLE IF NOT EXISTS sequoia_alloc (
          tag TEXT PRIMARY KEY NOT NULL,
          max_id INTEGER NOT NULL,
          step INTEGER NOT NULL,
          description TEXT NOT NULL DEFAULT '',
          updated_at INTEGER NOT NULL,
          fence_epoch INTEGER NOT NULL DEFAULT 0,
          generation INTEGER NOT NULL DEFAULT 0
        )`,
      ];
    }
    // In the same IMMEDIATE transaction, so processes starting at once add it once; by name, not by version
    // (an older version of Sequoia may have written version 1 back since).
    if ((yield ["SELECT 1 FROM pragma_table_info('sequoia_alloc') WHERE name = 'generation'"]).rows.length === 0) {
      yield ['ALTER TABLE sequoia_alloc ADD COLUMN generation INTEGER NOT NULL DEFAULT 0'];
    }
    for (const ddl of ledgerDdl('sequoia_ledger', 'standard')) yield [ddl];
    yield [
      row ? 'UPDATE sequoia_schema SET version = MAX(version, $1)' : 'INSERT INTO sequoia_schema (version) VALUES ($1)',
      [SCHEMA_VERSION],
    ];
  },
  allocate: [
    allocationRecordSql('sequoia_ledger', NOW_MS, {
      first: 'max_id',
      last: `max_id + ${STEP} - 1`,
      step: STEP,
      from: `sequoia_alloc WHERE ${HAS_ROOM} AND $7`,
    }),
    `UPDATE sequoia_alloc SET max_id = max_id + ${STEP}, updated_at = ${NOW_MS} WHERE ${HAS_ROOM}
     RETURNING max_id, step, fence_epoch, generation, ${STEP} AS applied`,
  ],
  get: 'SELECT * FROM sequoia_alloc WHERE tag = $1',
  list: 'SELECT * FROM sequoia_alloc ORDER BY tag',
  create: `INSERT INTO sequoia_alloc (tag, max_id, step, description, updated_at, fence_epoch, generation)
    VALUES ($1, ${big('$2')}, $3, $4, ${NOW_MS}, 0, ${big('$5')})`,
  update: `UPDATE sequoia_alloc SET step = COALESCE($2, step), description = COALESCE($3, description), updated_at = ${NOW_MS} WHERE tag = $1`,
  remove: 'DELETE FROM sequoia_alloc WHERE tag = $1',
  // The IMMEDIATE transaction holds the file's write lock already.
  lock: 'SELECT max_id FROM sequoia_alloc WHERE tag = $1',
  fence: `UPDATE sequoia_alloc SET max_id = MAX(max_id, ${big('$2')}), fence_epoch = fence_epoch + 1, updated_at = ${NOW_MS} WHERE tag = $1`,
  giveBack: `UPDATE sequoia_alloc SET max_id = ${big('$3')}, updated_at = ${NOW_MS}
    WHERE tag = $1 AND max_id = ${big('$2')} AND fence_epoch = $4 AND generation = ${big('$5')}`,
  record: recordSql('sequoia_ledger', NOW_MS, big),
  ranges: `SELECT ${LEDGER_COLUMNS} FROM sequoia_ledger WHERE tag = $1 AND first_id <= ${big('$2')} AND last_id >= ${big('$3')} ORDER BY at_ms, rowid`,
  entries: `SELECT ${LEDGER_COLUMNS} FROM sequoia_ledger WHERE tag = $1 ORDER BY first_id, rowid`,
  page: {
    select: `SELECT ${LEDGER_COLUMNS} FROM sequoia_ledger WHERE tag = $1 AND`,
    from: `first_id >= ${big('$2')} ORDER BY first_id LIMIT $3`,
    at: `first_id = ${big('$2')}`,
  },
  top: ledgerTopSql('sequoia_ledger', 'TEXT'),
  prune: `DELETE FROM sequoia_ledger WHERE rowid IN (SELECT rowid FROM sequoia_ledger WHERE at_ms < ${big('$1')} ORDER BY at_ms LIMIT $2)`,
};
