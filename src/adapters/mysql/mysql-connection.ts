/**
 * One MySQL/MariaDB pool shared by the segment store and the lease store of
 * a server: its settings, `withConnection` and its error mapping live here
 * once. The pool ends when the last store using it closes. `MysqlStatements`
 * is one store's way of running statements on it.
 */
import mysql, { type Pool, type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { InvalidArgumentError, SequoiaError, UnavailableError } from '../../core/errors.js';
import { positional, type RunSql, type SqlAnswer, type SqlPool } from '../kit/sql/sql-database.js';
import { SharedPool } from '../kit/connection/shared-pool.js';
import { positiveSetting, storeCallAsync, storeError } from '../kit/connection/store-boundary.js';

export interface MysqlConnectionOptions {
  /** `mysql://user:pass@host:port/db`. */
  readonly uri: string;
  /** Default 10. */
  readonly maxConnections?: number;
  /** How long to wait for a new connection, ms. Default 3000. */
  readonly connectTimeoutMs?: number;
  /** Idle connections are closed after this, ms. Default 30000. */
  readonly idleTimeoutMs?: number;
}

export class MysqlConnection extends SharedPool<Pool> {
  readonly pool: Pool;

  constructor(options: MysqlConnectionOptions) {
    super(options.uri, 3306);
    const max = positiveSetting(options.maxConnections ?? 10, 'maxConnections');
    this.pool = mysql.createPool({
      uri: options.uri,
      connectionLimit: max,
      maxIdle: max,
      idleTimeout: positiveSetting(options.idleTimeoutMs ?? 30_000, 'idleTimeoutMs'),
      connectTimeout: positiveSetting(options.connectTimeoutMs ?? 3000, 'connectTimeoutMs'),
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
      enableKeepAlive: true,
      waitForConnections: true,
      // Matched rows, not changed rows: an UPDATE that writes the same values still counts.
      flags: ['FOUND_ROWS'],
      // A transaction sent in one round trip (`MysqlStatements.multi`). Every value is a
      // placeholder and the only interpolated names are checked, so no input can add a statement.
      multipleStatements: true,
    });
    // A pooled connection that dies while idle emits 'error'; without a
    // listener Node would throw it and kill the process. The pool drops it.
    // (mysql2 passes the core connection here, whatever the promise typings say.)
    this.pool.on('connection', (conn) => {
      const target = ((conn as { connection?: unknown }).connection ?? conn) as { on?: (e: string, f: () => void) => void };
      target.on?.('error', () => {});
    });
  }

  /**
   * Runs `fn` on one pooled connection. A connection that failed with a
   * driver error is destroyed, not reused (its session state is unknown);
   * one that failed with a SequoiaError (a rule, not the link) goes back.
   */
  async withConnection<T>(backend: string, fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    const c = await storeCallAsync(backend, () => this.pool.getConnection(), this.target);
    try {
      const r = await fn(c);
      c.release();
      return r;
    } catch (e) {
      if (e instanceof SequoiaError) c.release();
      else c.destroy();
      throw storeError(backend, e, this.target);
    }
  }
}

/** The connection options every MySQL store takes. */
export interface MysqlStoreOptions extends Partial<MysqlConnectionOptions> {
  /** A connection shared with the lease store; `uri` and the pool options are then ignored. */
  readonly connection?: MysqlConnection;
  /** Per-query timeout, ms. Default 5000. */
  readonly queryTimeoutMs?: number;
}

/**
 * One store's statements on its (possibly shared) pool: each runs with the
 * store's query timeout, and driver errors become STORE_UNAVAILABLE naming
 * the store (`backend`) and where the database is.
 */
export class MysqlStatements {
  readonly connection: MysqlConnection;
  readonly timeout: number;

  constructor(
    options: MysqlStoreOptions,
    private readonly backend: string,
  ) {
    this.timeout = positiveSetting(options.queryTimeoutMs ?? 5000, 'queryTimeoutMs');
    if (options.connection) this.connection = options.connection.retain();
    else if (options.uri) this.connection = new MysqlConnection({ ...options, uri: options.uri }).retain();
    else throw new InvalidArgumentError('store: a MySQL URI or connection is required');
  }

  /** A SELECT on the pool: its rows. */
  async select<T extends RowDataPacket>(sql: string, values?: unknown[]): Promise<T[]> {
    try {
      const [rows] = await this.connection.pool.query<T[]>({ sql, values, timeout: this.timeout });
      return rows;
    } catch (e) {
      throw this.wrap(e);
    }
  }

  /** A write on the pool: its result. */
  async exec(sql: string, values?: unknown[]): Promise<ResultSetHeader> {
    try {
      const [r] = await this.connection.pool.query<ResultSetHeader>({ sql, values, timeout: this.timeout });
      return r;
    } catch (e) {
      throw this.wrap(e);
    }
  }

  /** A statement on a held connection (errors are mapped when `withConnection` or `transaction` ends). */
  async run(c: PoolConnection, sql: string, values?: unknown[]): Promise<unknown> {
    const [r] = await c.query({ sql, values, timeout: this.timeout });
    return r;
  }

  /** A SELECT on a held connection: its rows. */
  async rows<T extends RowDataPacket>(c: PoolConnection, sql: string, values?: unknown[]): Promise<T[]> {
    const [rows] = await c.query<T[]>({ sql, values, timeout: this.timeout });
    return rows;
  }

  withConnection<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.connection.withConnection(this.backend, fn);
  }

  /**
   * Several statements in one round trip on one connection, answering each
   * one's result in order. The text must hold its own transaction (START
   * TRANSACTION … COMMIT): the server stops at a failed statement, and the
   * transaction it leaves open is rolled back here.
   */
  multi(sql: string, values: unknown[]): Promise<unknown[]> {
    return this.withConnection(async (c) => {
      try {
        const [results] = await c.query({ sql, values, timeout: this.timeout });
        return results as unknown[];
      } catch (e) {
        await c.query('ROLLBACK').catch(() => {});
        throw e;
      }
    });
  }

  /**
   * One transaction on one connection; rolled back on any failure.
   * `readCommitted`: each statement sees the latest commits (optimistic
   * retries: under REPEATABLE READ a retry re-reads its own stale snapshot).
   */
  transaction<T>(fn: (c: PoolConnection) => Promise<T>, readCommitted = false): Promise<T> {
    return this.withConnection(async (c) => {
      if (readCommitted) await this.run(c, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await this.run(c, 'START TRANSACTION');
      try {
        const r = await fn(c);
        await this.run(c, 'COMMIT');
        return r;
      } catch (e) {
        await c.query('ROLLBACK').catch(() => {});
        throw e;
      }
    });
  }

  /** Driver errors become STORE_UNAVAILABLE naming the store and its host, port and database. */
  wrap(e: unknown): SequoiaError {
    return storeError(this.backend, e, this.connection.target);
  }

  release(): Promise<void> {
    return this.connection.release();
  }
}

/**
 * The pool as one store runs statements on it (kit/sql/sql-database.ts), `$n`
 * placeholders turned into MySQL's `?`. A write's count is the rows it
 * matched (the pool's FOUND_ROWS flag), as PostgreSQL counts them.
 */
export class MysqlPool implements SqlPool {
  private readonly db: MysqlStatements;

  constructor(
    options: MysqlStoreOptions,
    readonly backend: string,
  ) {
    this.db = new MysqlStatements(options, backend);
  }

  get connection(): MysqlConnection {
    return this.db.connection;
  }

  async run(sql: string, values?: unknown[]): Promise<SqlAnswer> {
    return answer(await this.db.exec(...positional(sql, values)));
  }

  /** One round trip: the statements between START TRANSACTION and COMMIT, answering the last one's rows. */
  async script(sql: readonly string[], values: unknown[]): Promise<readonly unknown[]> {
    const results = await this.db.multi(...positional(`START TRANSACTION;\n${sql.join(';\n')};\nCOMMIT`, values));
    return answer(results[sql.length]).rows;
  }

  transaction<T>(fn: (run: RunSql) => Promise<T>, readCommitted = false): Promise<T> {
    return this.db.transaction((c) => fn(this.runner(c)), readCommitted);
  }

  /** On one connection, under a named lock: several processes may start at once, and a migration may look before it alters. */
  migration<T>(fn: (run: RunSql) => Promise<T>): Promise<T> {
    return this.db.withConnection(async (c) => {
      const [lock] = await c.query<RowDataPacket[]>({ sql: 'SELECT GET_LOCK(?, ?) AS got', timeout: this.db.timeout + 10_000 }, [
        'sequoia_schema',
        10,
      ]);
      if (Number(lock[0]?.got) !== 1) {
        throw new UnavailableError('STORE_UNAVAILABLE', `${this.backend}: could not take the schema migration lock`, {
          retryAfterMs: 1000,
        });
      }
      try {
        return await fn(this.runner(c));
      } finally {
        await c.query('SELECT RELEASE_LOCK(?)', ['sequoia_schema']).catch(() => {});
      }
    });
  }

  release(): Promise<void> {
    return this.db.release();
  }

  private runner(c: PoolConnection): RunSql {
    return async (sql, values) => answer(await this.db.run(c, ...positional(sql, values)));
  }
}

function answer(r: unknown): SqlAnswer {
  return Array.isArray(r) ? { rows: r, count: r.length } : { rows: [], count: (r as ResultSetHeader).affectedRows };
}
