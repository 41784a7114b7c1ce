/**
 * SegmentStore on PostgreSQL (`pg`): the SQL store (kit/sql/sql-segment-store.ts)
 * over PostgreSQL's statements. Every allocation is ONE atomic statement:
 *
 *   UPDATE <table> SET max_id = max_id + s WHERE tag = $1 AND max_id <= 2^63-1 - s RETURNING ...
 *
 * The row lock of the UPDATE serialises concurrent allocators (any number of
 * processes and machines); the WHERE clause makes the overflow check part of
 * the same statement, so max_id never passes 2^63-1 and never wraps; the
 * ledger row is written by the same statement (a CTE), as is a give-back's.
 *
 * BIGINT values are always selected as text (`max_id::text`) and turned into
 * bigint by the store, so a global `pg.types` parser set by someone else can
 * never make them lossy JS numbers. Only parameterised SQL; the one
 * interpolated name, the table, is checked against /^[a-z_][a-z0-9_]{0,62}$/.
 *
 * The pool reconnects by itself (a broken client is dropped and a new one made
 * on the next query), so the store survives a server restart; idle-client
 * errors are caught by the pool's 'error' listener and never crash the process.
 * Driver errors become STORE_UNAVAILABLE with the original as `cause`.
 */
import type { ServerIdentity } from '../../ports/range-ledger.js';
import { allocationRecordSql, ledgerDdl, ledgerPlace, type LedgerPlace, ledgerTopSql, recordSql } from '../kit/segment/range-ledger.js';
import { overPool } from '../kit/sql/sql-database.js';
import { type SegmentStatements, SqlSegmentStore } from '../kit/sql/sql-segment-store.js';
import { type PgPoolLike, PostgresConnection, type PostgresConnectionOptions, PostgresPool } from './postgres-connection.js';

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

export class PostgresSegmentStore extends SqlSegmentStore {
  /** The shared pool (the lease store of the same URL holds the same one). */
  private readonly pool: PgPoolLike;

  constructor(options: PostgresSegmentStoreOptions) {
    const place = ledgerPlace(options);
    const connection = options.connection ?? new PostgresConnection(options);
    const db = overPool(new PostgresPool({ ...options, connection }, 'PostgreSQL store'));
    const recording = options.recordLedger ?? true;
    super({ kind: 'postgres', table: place.table, sql: postgresStatements(place), db, who: place.who, recording, duplicate: '23505' });
    this.pool = connection.pool;
  }
}

const COLUMNS = 'tag, max_id::text AS max_id, step, description, updated_at, fence_epoch, generation::text AS generation';

/** The ledger's columns as text where they pass 2^53; an ORDER BY names the table's own columns (`l.first_id`), not these text aliases. */
const LEDGER_TEXT =
  'tag, kind, first_id::text AS first_id, last_id::text AS last_id, stride, step, host, pid, instance, version, at_ms::text AS at_ms, fence_epoch, generation::text AS generation';

const NOW_MS = '(extract(epoch FROM now()) * 1000)::bigint';

function postgresStatements({ table: t, ledger }: LedgerPlace): SegmentStatements {
  return {
    *migrate() {
      yield ['CREATE TABLE IF NOT EXISTS sequoia_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)'];
      const [row] = (yield ['SELECT version FROM sequoia_schema WHERE component = $1', [t]]).rows as { version: number }[];
      const version = row?.version ?? 0;
      if (version < 1) {
        yield [
          `CREATE TABLE IF NOT EXISTS ${t} (
          tag TEXT PRIMARY KEY,
          max_id BIGINT NOT NULL CHECK (max_id >= 0),
          step INTEGER NOT NULL CHECK (step > 0),
          description TEXT NOT NULL DEFAULT '',
          updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
          fence_epoch INTEGER NOT NULL DEFAULT 0,
          generation BIGINT NOT NULL DEFAULT 0
        )`,
        ];
      }
      // Under the same advisory lock; IF NOT EXISTS keeps it idempotent.
      if (version < 2) yield [`ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS generation BIGINT NOT NULL DEFAULT 0`];
      for (const ddl of ledgerDdl(ledger, 'standard')) yield [ddl];
      yield [
        `INSERT INTO sequoia_schema (component, version) VALUES ($1, $2)
         ON CONFLICT (component) DO UPDATE SET version = GREATEST(sequoia_schema.version, EXCLUDED.version)`,
        [t, SCHEMA_VERSION],
      ];
    },
    // One statement, one round trip: the UPDATE's row lock serialises allocators, its WHERE is the overflow check, the CTE writes the ledger row.
    allocate: [
      `WITH a AS (
         UPDATE ${t}
           SET max_id = max_id + COALESCE($2::integer, step), updated_at = now()
         WHERE tag = $1 AND max_id <= 9223372036854775807 - COALESCE($2::integer, step)
         RETURNING max_id, step, fence_epoch, generation, COALESCE($2::integer, step) AS applied
       ), l AS (${allocationRecordSql(ledger, NOW_MS, { first: 'max_id - applied', last: 'max_id - 1', step: 'applied', from: 'a WHERE $7::boolean' })})
       SELECT max_id::text AS max_id, step, fence_epoch, generation::text AS generation, applied FROM a`,
    ],
    get: `SELECT ${COLUMNS} FROM ${t} WHERE tag = $1`,
    // COLLATE "C": byte order, the same order every other store lists in.
    list: `SELECT ${COLUMNS} FROM ${t} ORDER BY tag COLLATE "C"`,
    create: `INSERT INTO ${t} (tag, max_id, step, description, updated_at, fence_epoch, generation)
         VALUES ($1, $2::bigint, $3, $4, now(), 0, $5::bigint)`,
    update: `UPDATE ${t} SET step = COALESCE($2::integer, step), description = COALESCE($3::text, description), updated_at = now()
       WHERE tag = $1`,
    remove: `DELETE FROM ${t} WHERE tag = $1`,
    lock: `SELECT max_id::text AS max_id FROM ${t} WHERE tag = $1 FOR UPDATE`,
    fence: `UPDATE ${t} SET max_id = GREATEST(max_id, $2::bigint), fence_epoch = fence_epoch + 1, updated_at = now() WHERE tag = $1`,
    giveBack: `UPDATE ${t} SET max_id = $3::bigint, updated_at = now()
       WHERE tag = $1 AND max_id = $2::bigint AND fence_epoch = $4::bigint AND generation = $5::bigint`,
    record: recordSql(ledger, NOW_MS, (p) => `${p}::bigint`),
    ranges: `SELECT ${LEDGER_TEXT} FROM ${ledger} l WHERE tag = $1 AND first_id <= $2::bigint AND last_id >= $3::bigint ORDER BY l.at_ms, l.first_id`,
    entries: `SELECT ${LEDGER_TEXT} FROM ${ledger} l WHERE tag = $1 ORDER BY l.first_id, l.at_ms`,
    page: {
      select: `SELECT ${LEDGER_TEXT} FROM ${ledger} l WHERE tag = $1 AND`,
      from: 'l.first_id >= $2::bigint ORDER BY l.first_id LIMIT $3',
      at: 'l.first_id = $2::bigint',
    },
    top: ledgerTopSql(ledger, 'text'),
    prune: `DELETE FROM ${ledger} WHERE ctid IN (SELECT ctid FROM ${ledger} WHERE at_ms < $1::bigint ORDER BY at_ms LIMIT $2)`,
  };
}
