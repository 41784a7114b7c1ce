/**
 * One PostgreSQL pool shared by the segment store and the lease store of a
 * server: its settings, its transaction helper and its error mapping live
 * here once. The pool ends when the last store using it closes.
 */
import pg from 'pg';
import { InvalidArgumentError, SequoiaError } from '../../core/errors.js';
import { SharedPool } from '../kit/connection/shared-pool.js';
import type { RunSql, SqlAnswer, SqlPool } from '../kit/sql/sql-database.js';
import { positiveSetting, storeCallAsync, storeError } from '../kit/connection/store-boundary.js';

/**
 * Key of the advisory lock that serialises every store's schema migrations
 * ("SEQU"): CREATE TABLE IF NOT EXISTS alone can still race on the catalog
 * when several processes start at once.
 */
const MIGRATION_LOCK_KEY = 0x53455155;

/** The part of a `pg.Pool` the stores call. */
export interface PgPoolLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  connect(): Promise<PgClientLike>;
  end(): Promise<void>;
}
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  release(err?: Error | boolean): void;
}

export interface PostgresConnectionOptions {
  /** `postgres://user:pass@host:port/db`. Ignored when `pool` is given. */
  readonly connectionString?: string;
  /** A pool made by the caller (it then owns the pool's settings; the last `release()` still ends it). */
  readonly pool?: PgPoolLike;
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

export class PostgresConnection extends SharedPool<PgPoolLike> {
  readonly pool: PgPoolLike;

  constructor(options: PostgresConnectionOptions) {
    super(options.connectionString, 5432);
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
    // An idle client whose server went away emits 'error' on the pool; without
    // a listener Node would throw it and kill the process.
    pool.on('error', options.onPoolError ?? (() => {}));
    this.pool = pool as unknown as PgPoolLike;
  }

  /** One statement; driver errors become STORE_UNAVAILABLE naming `backend`. */
  async query(backend: string, text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    return storeCallAsync(backend, () => this.pool.query(text, values), this.target);
  }

  /** Runs `fn` in one transaction on one client; a client that failed with a driver error is dropped, not reused. */
  async transaction<T>(backend: string, fn: (c: PgClientLike) => Promise<T>): Promise<T> {
    const c = await storeCallAsync(backend, () => this.pool.connect(), this.target);
    let failed: unknown;
    try {
      await c.query('BEGIN');
      const r = await fn(c);
      await c.query('COMMIT');
      return r;
    } catch (e) {
      failed = e;
      await c.query('ROLLBACK').catch(() => {});
      throw storeError(backend, e, this.target);
    } finally {
      c.release(failed instanceof Error && !(failed instanceof SequoiaError) ? failed : undefined);
    }
  }

  /** `fn` in one transaction under the schema-migration lock: one process migrates at a time. */
  migration<T>(backend: string, fn: (c: PgClientLike) => Promise<T>): Promise<T> {
    return this.transaction(backend, async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      return fn(c);
    });
  }
}

/** The connection options of a store on the pool. */
export interface PostgresPoolOptions extends PostgresConnectionOptions {
  /** A connection shared with the lease store; the other connection options are then ignored. */
  readonly connection?: PostgresConnection;
}

/** The pool as one store runs statements on it (kit/sql/sql-database.ts). */
export class PostgresPool implements SqlPool {
  private readonly connection: PostgresConnection;

  constructor(
    options: PostgresPoolOptions,
    readonly backend: string,
  ) {
    this.connection = (options.connection ?? new PostgresConnection(options)).retain();
  }

  async run(sql: string, values?: unknown[]): Promise<SqlAnswer> {
    const r = await this.connection.query(this.backend, sql, values);
    return { rows: r.rows, count: r.rowCount ?? 0 };
  }

  transaction<T>(fn: (run: RunSql) => Promise<T>, readCommitted = false): Promise<T> {
    return this.connection.transaction(this.backend, async (c) => {
      // The transaction's first statement, so it holds for all of it.
      if (readCommitted) await c.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      return fn(runnerOn(c));
    });
  }

  migration<T>(fn: (run: RunSql) => Promise<T>): Promise<T> {
    return this.connection.migration(this.backend, (c) => fn(runnerOn(c)));
  }

  release(): Promise<void> {
    return this.connection.release();
  }
}

function runnerOn(c: PgClientLike): RunSql {
  return async (sql, values) => {
    const r = await c.query(sql, values);
    return { rows: r.rows, count: r.rowCount ?? 0 };
  };
}
