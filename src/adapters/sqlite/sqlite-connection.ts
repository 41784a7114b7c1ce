/**
 * One SQLite handle shared by the segment store and the lease store of a
 * store URL, as the SQL backends share one pool: one file descriptor and one
 * WAL reader per process, and `sqlite::memory:` holds segments and leases in
 * the same database. Each store adds its own tables once (`setUp` per name);
 * the handle closes when the last store using it closes, and opens again for
 * a store that initialises after that.
 *
 * The handle reads integers as numbers; a store that needs 64-bit values asks
 * for them per statement (`safeIntegers(true)`), so one store's choice never
 * changes what the other reads.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { openSqlite, retryWhileBusy } from '../kit/sqlite-open.js';

export interface SqliteConnectionOptions {
  /** File path, or ':memory:'. */
  readonly path: string;
  /** How long a writer waits for another process's lock, ms. Default 2000. */
  readonly busyTimeoutMs?: number;
  /** How long opening keeps retrying while other processes open the same file, ms. Default 5000. */
  readonly openTimeoutMs?: number;
}

export class SqliteConnection {
  readonly path: string;
  private readonly busyTimeoutMs: number;
  private readonly openTimeoutMs: number;
  private db: Database.Database | undefined;
  private readonly ready = new Set<string>();
  private users = 0;

  constructor(options: SqliteConnectionOptions) {
    this.path = options.path;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 2000;
    this.openTimeoutMs = options.openTimeoutMs ?? 5000;
  }

  /**
   * Opens the file on first use (WAL, full fsync) and runs `setUp` once for
   * `name` (its schema), retrying while another process holds the locks it
   * needs. Each call is one user until `release()`. Throws what SQLite threw.
   *
   * @internal the stores' own use: stripped from the published declarations
   * (tsconfig.build.json `stripInternal`) so they name no driver type and a
   * consumer needs no `@types/better-sqlite3`.
   */
  acquire(name: string, setUp: (db: Database.Database) => void): Database.Database {
    if (!this.db) {
      if (this.path !== ':memory:') mkdirSync(dirname(this.path), { recursive: true });
      this.db = openSqlite(this.path, this.openTimeoutMs, (db) => db.pragma(`busy_timeout = ${this.busyTimeoutMs}`));
      this.ready.clear();
    }
    const db = this.db;
    if (!this.ready.has(name)) {
      try {
        retryWhileBusy(() => setUp(db), this.openTimeoutMs);
      } catch (e) {
        if (this.users === 0) this.close();
        throw e;
      }
      this.ready.add(name);
    }
    this.users++;
    return db;
  }

  /** One user is done; the last one closes the handle. */
  release(): void {
    if (this.users === 0) return;
    this.users--;
    if (this.users === 0) this.close();
  }

  private close(): void {
    this.db?.close();
    this.db = undefined;
  }
}
