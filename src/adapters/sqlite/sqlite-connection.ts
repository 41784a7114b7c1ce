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
 *
 * A FILE REPLACED UNDER A RUNNING SERVER. An open handle keeps reading and
 * writing the file it opened, even after another file was renamed onto its
 * path (a restore) and the old one is gone from every directory: this server
 * would go on taking ranges nobody else sees, and a fence made on the file at
 * the path would never reach it. So each store operation first compares the
 * file at the path with the one open (`current`): a different file is opened
 * in its place (the rollback guard then judges its answers against the marks,
 * as after a restart); no file at all refuses, rather than creating an empty
 * one.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { located, SequoiaError, UnavailableError } from '../../core/errors.js';
import { positional, type SqlAnswer, type SqlDatabase, type Steps } from '../kit/sql/sql-database.js';
import { openSqlite, retryWhileBusy } from '../kit/connection/sqlite-open.js';
import { storeCall } from '../kit/connection/store-boundary.js';

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
  /** The file the handle has open (device and inode); undefined in memory. */
  private file: { dev: number; ino: number } | undefined;
  /** Each store's schema set-up, run again on a file opened in place of a replaced one. */
  private readonly setUps = new Map<string, (db: Database.Database) => void>();
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
      this.openFile();
      if (this.users === 0) this.setUps.clear();
    }
    const db = this.db as Database.Database;
    if (!this.setUps.has(name)) {
      try {
        retryWhileBusy(() => setUp(db), this.openTimeoutMs);
      } catch (e) {
        if (this.users === 0) this.close();
        throw e;
      }
      this.setUps.set(name, setUp);
    }
    this.users++;
    return db;
  }

  /**
   * The handle on the file now at the path, for one store operation: the open
   * one while it is still that file; else (replaced, see the file comment)
   * one opened on the new file, with every store's set-up run on it. Throws
   * STORE_UNAVAILABLE when the path names no file any more.
   *
   * @internal as `acquire`.
   */
  current(): Database.Database {
    if (this.users === 0) throw new UnavailableError('STORE_UNAVAILABLE', 'the SQLite store is not open');
    if (this.db && this.file === undefined) return this.db; // in memory
    let now: { dev: number; ino: number } | undefined;
    try {
      now = statSync(this.path, { throwIfNoEntry: false });
    } catch (e) {
      throw this.unavailable((w) => `cannot look at the SQLite file${w ? ` ${w}` : ''}`, e);
    }
    if (now === undefined) {
      throw this.unavailable(
        (w) => `the SQLite file${w ? ` ${w}` : ''} was removed while this process had it open; put the store's file back at that path`,
      );
    }
    if (this.db && now.dev === this.file?.dev && now.ino === this.file.ino) return this.db;
    // Replaced (or a reopen that failed last time): the file at the path from now on.
    this.db?.close();
    this.db = undefined;
    let fresh: Database.Database | undefined;
    try {
      fresh = this.openFile();
      for (const setUp of this.setUps.values()) retryWhileBusy(() => setUp(fresh as Database.Database), this.openTimeoutMs);
      return fresh;
    } catch (e) {
      fresh?.close();
      this.db = undefined;
      throw this.unavailable((w) => `cannot open the SQLite file now at ${w ?? 'its path'}`, e);
    }
  }

  /** STORE_UNAVAILABLE naming the file's path to the operator only (the log, the CLI), never in an answer. */
  private unavailable(say: (where: string | undefined) => string, cause?: unknown): UnavailableError {
    const { message, located: split } = located(say, this.path);
    return new UnavailableError('STORE_UNAVAILABLE', message, { cause, retryAfterMs: 1000, located: split });
  }

  private openFile(): Database.Database {
    const open = () => openSqlite(this.path, this.openTimeoutMs, (db) => db.pragma(`busy_timeout = ${this.busyTimeoutMs}`));
    if (this.path === ':memory:') {
      this.file = undefined;
      return (this.db = open());
    }
    // The same file before and after opening is the file SQLite opened (a rename in between: open again).
    for (;;) {
      const before = statSync(this.path, { throwIfNoEntry: false });
      const db = open();
      const after = statSync(this.path, { throwIfNoEntry: false });
      if (after !== undefined && before?.dev === after.dev && before.ino === after.ino) {
        this.file = { dev: after.dev, ino: after.ino };
        return (this.db = db);
      }
      db.close();
    }
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
    this.file = undefined;
  }
}

/** What a handle keeps for a store: its statements, prepared once, and a transaction to run work in. */
interface Prepared {
  readonly statements: Map<string, { readonly statement: Database.Statement; readonly reader: boolean }>;
  readonly transaction: Database.Transaction<(work: () => unknown) => unknown>;
}

/**
 * The handle as a SQL store runs statements on it (kit/sql/sql-database.ts).
 * Each call works on the file now at the path (`current`); a script and a
 * transaction run synchronously in one `BEGIN IMMEDIATE`, so writers of
 * every process queue on the file lock (bounded by the busy timeout) instead
 * of failing on upgrade. Integers are read as 64-bit (`safeIntegers`): SQLite
 * would turn a sum past 2^63-1 into a REAL, so the statements keep every sum
 * below it; whole numbers are bound as integers (better-sqlite3 would bind
 * a REAL). Driver errors become STORE_UNAVAILABLE naming `backend`.
 */
export class SqliteDatabase implements SqlDatabase {
  private opened = false;
  private readonly prepared = new WeakMap<Database.Database, Prepared>();

  /** `name`: the store's set-up on the handle (SqliteConnection.acquire). */
  constructor(
    private readonly connection: SqliteConnection,
    private readonly name: string,
    private readonly backend: string,
  ) {}

  run(sql: string, values?: unknown[]): Promise<SqlAnswer> {
    return this.call((db) => this.exec(db, sql, values));
  }

  script(sql: readonly string[], values: unknown[]): Promise<readonly unknown[]> {
    return this.call((db) => this.immediate(db, () => sql.reduce<readonly unknown[]>((_, s) => this.exec(db, s, values).rows, [])));
  }

  transaction<T>(steps: () => Steps<T>): Promise<T> {
    return this.call((db) => this.immediate(db, () => this.drive(db, steps())));
  }

  /** Opens the file; `steps` run again on a file put in place of the open one. */
  async migration(steps: () => Steps<void>): Promise<void> {
    if (this.opened) return;
    try {
      this.connection.acquire(this.name, (db) => this.immediate(db, () => this.drive(db, steps())));
    } catch (e) {
      if (e instanceof SequoiaError) throw e;
      const code = (e as { code?: string }).code ?? String(e);
      const { message, located: split } = located((w) => `cannot open SQLite file${w ? ` ${w}` : ''} (${code})`, this.connection.path);
      throw new UnavailableError('STORE_UNAVAILABLE', message, { cause: e, located: split });
    }
    this.opened = true;
  }

  async release(): Promise<void> {
    if (this.opened) this.connection.release();
    this.opened = false;
  }

  private async call<T>(fn: (db: Database.Database) => T): Promise<T> {
    return storeCall(this.backend, () => {
      if (!this.opened) throw new UnavailableError('STORE_UNAVAILABLE', 'the SQLite store is not open');
      return fn(this.connection.current());
    });
  }

  private immediate<T>(db: Database.Database, work: () => T): T {
    return this.on(db).transaction.immediate(work) as T;
  }

  private drive<T>(db: Database.Database, steps: Steps<T>): T {
    let next = steps.next();
    while (!next.done) next = steps.next(this.exec(db, ...next.value));
    return next.value;
  }

  private exec(db: Database.Database, sql: string, values?: unknown[]): SqlAnswer {
    const statements = this.on(db).statements;
    const [text, ordered] = positional(sql, values);
    let p = statements.get(sql);
    if (!p) {
      const statement = db.prepare(text).safeIntegers(true);
      statements.set(sql, (p = { statement, reader: statement.reader }));
    }
    const args = ordered.map(bindable);
    if (!p.reader) return { rows: [], count: p.statement.run(...args).changes };
    const rows = p.statement.all(...args);
    return { rows, count: rows.length };
  }

  private on(db: Database.Database): Prepared {
    let p = this.prepared.get(db);
    if (!p) this.prepared.set(db, (p = { statements: new Map(), transaction: db.transaction((work: () => unknown) => work()) }));
    return p;
  }
}

function bindable(v: unknown): unknown {
  if (typeof v === 'boolean') return v ? 1n : 0n;
  return typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : v;
}
