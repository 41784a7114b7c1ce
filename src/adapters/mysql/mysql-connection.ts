/**
 * One MySQL/MariaDB pool shared by the segment store and the lease store of
 * a server: its settings, `withConnection` and its error mapping live here
 * once. The pool ends when the last store using it closes.
 */
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import { SequoiaError } from '../../core/errors.js';
import { PoolUsers } from '../kit/pool-users.js';
import { positiveSetting, storeError, storeTarget } from '../kit/store-boundary.js';

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

export class MysqlConnection {
  readonly pool: Pool;
  /** host:port, database: named in every store error. */
  readonly target: string | undefined;
  private readonly users = new PoolUsers(() => this.pool.end());

  constructor(options: MysqlConnectionOptions) {
    this.target = storeTarget(options.uri, 3306);
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
    });
    // A pooled connection that dies while idle emits 'error'; without a
    // listener Node would throw it and kill the process. The pool drops it.
    // (mysql2 passes the core connection here, whatever the promise typings say.)
    this.pool.on('connection', (conn) => {
      const target = ((conn as { connection?: unknown }).connection ?? conn) as { on?: (e: string, f: () => void) => void };
      target.on?.('error', () => {});
    });
  }

  /** A store starts using the pool; each retain is matched by one `release`. */
  retain(): this {
    this.users.retain();
    return this;
  }

  /** A store is done; the last one ends the pool. */
  release(): Promise<void> {
    return this.users.release();
  }

  /**
   * Runs `fn` on one pooled connection. A connection that failed with a
   * driver error is destroyed, not reused (its session state is unknown);
   * one that failed with a SequoiaError (a rule, not the link) goes back.
   */
  async withConnection<T>(backend: string, fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    let c: PoolConnection;
    try {
      c = await this.pool.getConnection();
    } catch (e) {
      throw storeError(backend, e, this.target);
    }
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
