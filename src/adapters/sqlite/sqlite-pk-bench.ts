/**
 * `sequoia bench pk` on SQLite: the scratch database is the file the URL
 * names, which must not exist (it is created with O_EXCL, so the file this run
 * deletes is one it made), in WAL mode with synchronous=NORMAL. WAL bytes are
 * the growth of the -wal file (automatic checkpoints are off during the run;
 * the target checkpoints between slices and keeps the count), sizes come from
 * the dbstat table. One writer at a time: concurrency is 1. SQLite counts no
 * page splits.
 */
import { closeSync, existsSync, openSync, rmSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { InvalidArgumentError, SequoiaError } from '../../core/errors.js';
import type { PkBenchTarget, PkCounters, PkKindSpec, PkRow, PkTableShape, PkTableSize, PkTargetInfo } from '../../ports/pk-bench-target.js';
import {
  dropLeftover,
  intColumns,
  newRunId,
  PK_MARKER_TABLE,
  PK_MARKER_TOOL,
  pkTableName,
  refuseExisting,
} from '../kit/pk-bench/pk-bench-kit.js';
import { storeCall, storeError } from '../kit/connection/store-boundary.js';

const BACKEND = 'bench pk (SQLite)';
/** The -wal file is checkpointed (and its bytes counted) when it grows past this. */
const CHECKPOINT_BYTES = 64 * 1024 * 1024;

export class SqlitePkBenchTarget implements PkBenchTarget {
  private db: Database.Database | undefined;
  private readonly runId = newRunId();
  private created = false;
  private walCounted = 0;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly path: string) {
    if (path === '' || path === ':memory:')
      throw new InvalidArgumentError('--db sqlite:PATH needs the path of a new file (it is created, measured and deleted)');
  }

  private get handle(): Database.Database {
    if (!this.db) throw new SequoiaError('INTERNAL', 'scratch database not open');
    return this.db;
  }

  private run<T>(fn: () => T): T {
    return storeCall(BACKEND, fn, this.path);
  }

  /** The marker of an existing file, read-only; undefined when it is not a SQLite file with the marker table. */
  private readMarker(): { tool: string; run_id: string } | undefined {
    let db: Database.Database | undefined;
    try {
      db = new Database(this.path, { readonly: true, fileMustExist: true });
      return db.prepare(`SELECT tool, run_id FROM ${PK_MARKER_TABLE} LIMIT 1`).get() as { tool: string; run_id: string } | undefined;
    } catch {
      return undefined;
    } finally {
      db?.close();
    }
  }

  async createScratch(): Promise<PkTargetInfo> {
    try {
      closeSync(openSync(this.path, 'wx'));
    } catch (e) {
      if ((e as { code?: string }).code === 'EEXIST') throw refuseExisting(`file ${this.path}`, this.readMarker()?.tool === PK_MARKER_TOOL);
      throw storeError(BACKEND, e, this.path);
    }
    this.created = true;
    return this.run(() => {
      const db = new Database(this.path);
      this.db = db;
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('wal_autocheckpoint = 0');
      db.exec(
        `CREATE TABLE ${PK_MARKER_TABLE} (tool TEXT NOT NULL, run_id TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime('now')))`,
      );
      db.prepare(`INSERT INTO ${PK_MARKER_TABLE} (tool, run_id) VALUES (?, ?)`).run(PK_MARKER_TOOL, this.runId);
      const version = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
      return {
        engine: 'sqlite' as const,
        version: `SQLite ${version}`,
        scratch: `file ${this.path}`,
        settings: {
          journal_mode: 'wal',
          synchronous: 'NORMAL',
          page_size: String(db.pragma('page_size', { simple: true })),
          cache_size: String(db.pragma('cache_size', { simple: true })),
        },
        notes: ['page splits: SQLite keeps no counter', 'concurrency: SQLite has one writer at a time; the run uses one connection'],
        maxConcurrency: 1,
      };
    });
  }

  async createTable(kind: PkKindSpec, shape: PkTableShape): Promise<string> {
    // INTEGER PRIMARY KEY is the rowid itself, for the sequence as for any 64-bit key.
    const type = kind.keyType === 'sequence' || kind.keyType === 'int64' ? 'INTEGER' : kind.keyType === 'uuid' ? 'BLOB' : 'TEXT';
    const name = pkTableName(kind);
    const cols = intColumns(shape);
    this.run(() => {
      this.handle.exec(
        `CREATE TABLE ${name} (id ${type} PRIMARY KEY, ${[...cols.map((k) => `${k} INTEGER NOT NULL`), 'payload TEXT NOT NULL'].join(', ')})`,
      );
      for (const k of cols) this.handle.exec(`CREATE INDEX ${name}_${k} ON ${name} (${k})`);
    });
    return type;
  }

  async insert(kind: PkKindSpec, rows: readonly PkRow[]): Promise<void> {
    if (rows.length === 0) return;
    const withKey = kind.keyType !== 'sequence';
    const cols = [...(withKey ? ['id'] : []), ...rows[0]!.ints.map((_, i) => `k${i + 1}`), 'payload'];
    const cacheKey = `${kind.name}/${rows.length}/${cols.length}`;
    let st = this.statements.get(cacheKey);
    if (st === undefined) {
      const tuple = `(${cols.map(() => '?').join(',')})`;
      st = this.run(() =>
        this.handle.prepare(`INSERT INTO ${pkTableName(kind)} (${cols.join(',')}) VALUES ${Array(rows.length).fill(tuple).join(',')}`),
      );
      this.statements.set(cacheKey, st);
    }
    const values: unknown[] = [];
    for (const row of rows) {
      if (withKey) {
        const k = row.key;
        values.push(
          k instanceof Uint8Array ? Buffer.from(k.buffer, k.byteOffset, k.byteLength) : kind.keyType === 'int64' ? BigInt(k as string) : k,
        );
      }
      for (const v of row.ints) values.push(v);
      values.push(row.payload);
    }
    const statement = st;
    this.run(() => statement.run(...values));
  }

  private walSize(): number {
    try {
      return statSync(`${this.path}-wal`).size;
    } catch {
      return 0;
    }
  }

  async counters(): Promise<PkCounters> {
    const size = this.walSize();
    const logBytes = this.walCounted + size;
    if (size > CHECKPOINT_BYTES) {
      this.run(() => this.handle.pragma('wal_checkpoint(TRUNCATE)'));
      this.walCounted += size - this.walSize();
    }
    return { logBytes, pageSplits: null };
  }

  async size(kind: PkKindSpec): Promise<PkTableSize> {
    const name = pkTableName(kind);
    const rows = this.run(
      () =>
        this.handle
          .prepare(
            'SELECT d.name AS name, SUM(d.pgsize) AS bytes FROM dbstat d JOIN sqlite_schema s ON s.name = d.name WHERE s.tbl_name = ? GROUP BY d.name',
          )
          .all(name) as { name: string; bytes: number }[],
    );
    let tableBytes = 0;
    let indexBytes = 0;
    for (const r of rows) {
      if (r.name === name) tableBytes += r.bytes;
      else indexBytes += r.bytes;
    }
    return { tableBytes, indexBytes };
  }

  async dropScratch(): Promise<void> {
    if (!this.created) return;
    this.created = false;
    let marker: { run_id: string } | undefined;
    try {
      marker = this.db?.open
        ? (this.db.prepare(`SELECT tool, run_id FROM ${PK_MARKER_TABLE} LIMIT 1`).get() as { run_id: string } | undefined)
        : this.readMarker();
    } catch {
      marker = undefined; // no marker table any more: not provably ours
    }
    this.db?.close();
    this.db = undefined;
    if (marker?.run_id !== this.runId)
      throw new SequoiaError('INTERNAL', `file ${this.path} no longer carries this run's marker: left untouched`);
    this.remove();
  }

  private remove(): void {
    for (const suffix of ['-wal', '-shm', '-journal', '']) rmSync(`${this.path}${suffix}`, { force: true });
  }

  async dropLeftover(): Promise<string> {
    const run = await dropLeftover(`file ${this.path}`, {
      exists: async () => existsSync(this.path),
      marker: async () => this.readMarker(),
      drop: async () => this.remove(),
    });
    return `deleted ${this.path} (left by run ${run})`;
  }

  async close(): Promise<void> {
    this.db?.close();
    this.db = undefined;
  }
}
