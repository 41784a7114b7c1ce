/**
 * SegmentStore on an embedded SQLite file (better-sqlite3). Several processes
 * may share one file: WAL lets readers run beside the writer, and every
 * allocation is a `BEGIN IMMEDIATE` transaction, so writers queue on the file
 * lock (bounded by the busy timeout) instead of failing on upgrade.
 *
 * max_id is read and written as a 64-bit integer (safeIntegers) and the sum is
 * checked in bigint before it is written: SQLite silently turns an overflowing
 * integer sum into a REAL, which would lose precision.
 */
import type Database from 'better-sqlite3';
import { located, SequoiaError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import { MAX_ID } from '../../core/id.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { storeCall, storeError } from '../kit/store-boundary.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, newGeneration, readBack } from '../kit/segment-rules.js';
import { SqliteConnection } from './sqlite-connection.js';
import { sqliteLocation } from './sqlite-location.js';
import type { LedgerEntry, LedgerPage, LedgerTop, ServerIdentity } from '../../ports/range-ledger.js';
import {
  allocatedRange,
  entryFromRow,
  fencedRange,
  givenBackRange,
  LEDGER_COLUMNS,
  type LedgerRowText,
  ledgerDdl,
  ledgerPageByFirst,
  ledgerRowFor,
  ledgerTopFromRow,
  ledgerTopSql,
  processIdentity,
} from '../kit/range-ledger.js';

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

const BACKEND = 'SQLite store';

interface Row {
  tag: string;
  max_id: bigint;
  step: bigint;
  description: string;
  updated_at: bigint;
  fence_epoch: bigint;
  generation: bigint;
}

/** 1: the table; 2: its `generation` column (see TagInfo.generation). */
const SCHEMA_VERSION = 2;

export class SqliteSegmentStore implements SegmentStore {
  readonly kind = 'sqlite';
  /** An own property, so the off-loop proxy carries it too. */
  readonly location: string;
  private db: Database.Database | undefined;
  private readonly connection: SqliteConnection;
  private readonly who: ServerIdentity;
  private readonly recording: boolean;

  constructor(options: SqliteSegmentStoreOptions) {
    this.connection = 'connection' in options ? options.connection : new SqliteConnection(options);
    this.who = options.identity ?? processIdentity();
    this.recording = options.recordLedger ?? true;
    this.location = sqliteLocation(this.connection.path);
  }

  private get path(): string {
    return this.connection.path;
  }

  async init(): Promise<void> {
    if (this.db) return;
    try {
      const db = this.connection.acquire('segments', (db) => {
        db.transaction(() => {
          db.exec(`CREATE TABLE IF NOT EXISTS sequoia_schema (version INTEGER NOT NULL)`);
          const row = db.prepare('SELECT version FROM sequoia_schema').get() as { version: number } | undefined;
          const version = row ? Number(row.version) : 0;
          if (version < 1) {
            db.exec(`CREATE TABLE IF NOT EXISTS sequoia_alloc (
              tag TEXT PRIMARY KEY NOT NULL,
              max_id INTEGER NOT NULL,
              step INTEGER NOT NULL,
              description TEXT NOT NULL DEFAULT '',
              updated_at INTEGER NOT NULL,
              fence_epoch INTEGER NOT NULL DEFAULT 0,
              generation INTEGER NOT NULL DEFAULT 0
            )`);
          }
          // Inside the same IMMEDIATE transaction, so processes starting at
          // once add the column once; checked by name, not by version (an
          // older version of Sequoia may have written version 1 back since).
          const columns = db.prepare('PRAGMA table_info(sequoia_alloc)').all() as { name: string }[];
          if (!columns.some((c) => c.name === 'generation')) {
            db.exec('ALTER TABLE sequoia_alloc ADD COLUMN generation INTEGER NOT NULL DEFAULT 0');
          }
          // The range ledger (by name, as the column above).
          for (const ddl of ledgerDdl('sequoia_ledger')) db.exec(ddl);
          if (row) db.prepare('UPDATE sequoia_schema SET version = MAX(version, ?)').run(SCHEMA_VERSION);
          else db.prepare('INSERT INTO sequoia_schema (version) VALUES (?)').run(SCHEMA_VERSION);
        }).immediate();
      });
      this.db = db;
    } catch (e) {
      if (e instanceof SequoiaError) throw e;
      const code = (e as { code?: string }).code ?? String(e);
      const { message, located: split } = located((w) => `cannot open SQLite file${w ? ` ${w}` : ''} (${code})`, this.path);
      throw new UnavailableError('STORE_UNAVAILABLE', message, { cause: e, located: split });
    }
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    try {
      return this.open()
        .transaction((): Allocation => {
          const row = this.prepare('SELECT max_id, step, fence_epoch, generation FROM sequoia_alloc WHERE tag = ?').get(tag) as
            Pick<Row, 'max_id' | 'step' | 'fence_epoch' | 'generation'> | undefined;
          if (!row) throw new TagNotFoundError(tag);
          const storedStep = Number(row.step);
          const s = step ?? storedStep;
          const next = row.max_id + BigInt(s);
          if (next > MAX_ID) throw exhausted(tag);
          const now = Date.now();
          this.prepare('UPDATE sequoia_alloc SET max_id = ?, updated_at = ? WHERE tag = ?').run(next, BigInt(now), tag);
          this.record(ledgerRowFor(tag, 'allocate', allocatedRange(next, s), this.who, now, row));
          return { maxId: next, step: s, storedStep, fenceEpoch: Number(row.fence_epoch), generation: String(row.generation) };
        })
        .immediate();
    } catch (e) {
      throw wrap(e);
    }
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const row = this.run(() => this.prepare('SELECT * FROM sequoia_alloc WHERE tag = ?').get(tag) as Row | undefined);
    return row ? toInfo(row) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const rows = this.run(() => this.prepare('SELECT * FROM sequoia_alloc ORDER BY tag').all() as Row[]);
    return rows.map(toInfo);
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    try {
      this.open();
      this.prepare(
        'INSERT INTO sequoia_alloc (tag, max_id, step, description, updated_at, fence_epoch, generation) VALUES (?, ?, ?, ?, ?, 0, ?)',
      ).run(t.tag, start, BigInt(t.step ?? DEFAULT_STEP), t.description ?? '', BigInt(Date.now()), BigInt(newGeneration()));
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw new TagExistsError(t.tag);
      throw wrap(e);
    }
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const changes = this.run(
      () =>
        this.prepare(
          'UPDATE sequoia_alloc SET step = COALESCE(?, step), description = COALESCE(?, description), updated_at = ? WHERE tag = ?',
        ).run(update.step === undefined ? null : BigInt(update.step), update.description ?? null, BigInt(Date.now()), tag).changes,
    );
    if (changes === 0) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async deleteTag(tag: string): Promise<void> {
    const changes = this.run(() => this.prepare('DELETE FROM sequoia_alloc WHERE tag = ?').run(tag).changes);
    if (changes === 0) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    const found = this.run(() =>
      this.handle()
        .transaction((): boolean => {
          const now = Date.now();
          const old = this.prepare('SELECT max_id FROM sequoia_alloc WHERE tag = ?').get(tag) as Pick<Row, 'max_id'> | undefined;
          if (!old) return false;
          const row = this.prepare(
            `UPDATE sequoia_alloc SET max_id = MAX(max_id, ?), fence_epoch = fence_epoch + 1, updated_at = ? WHERE tag = ?
             RETURNING fence_epoch, generation`,
          ).get(to, BigInt(now), tag) as Pick<Row, 'fence_epoch' | 'generation'>;
          const jumped = fencedRange(old.max_id, to);
          if (jumped) this.record(ledgerRowFor(tag, 'fence', jumped, this.who, now, row));
          return true;
        })
        .immediate(),
    );
    if (!found) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    const changes = this.run(() =>
      this.handle()
        .transaction((): number => {
          const now = Date.now();
          const row = this.prepare(
            `UPDATE sequoia_alloc SET max_id = ?, updated_at = ?
             WHERE tag = ? AND max_id = ? AND fence_epoch = ? AND generation = ?
             RETURNING step, fence_epoch, generation`,
          ).get(from, BigInt(now), tag, expect.maxId, BigInt(expect.fenceEpoch), BigInt(expect.generation)) as
            Pick<Row, 'fence_epoch' | 'generation'> | undefined;
          if (!row) return 0;
          const range = givenBackRange(from, expect);
          if (range) {
            this.record(ledgerRowFor(tag, 'give-back', range, this.who, now, row));
          }
          return 1;
        })
        .immediate(),
    );
    return changes === 1;
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    const rows = this.run(
      () =>
        this.prepare(
          `SELECT ${LEDGER_COLUMNS} FROM sequoia_ledger WHERE tag = ? AND first_id <= ? AND last_id >= ? ORDER BY at_ms, rowid`,
        ).all(tag, id, id) as LedgerRowText[],
    );
    return rows.map(entryFromRow);
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    const rows = this.run(
      () => this.prepare(`SELECT ${LEDGER_COLUMNS} FROM sequoia_ledger WHERE tag = ? ORDER BY first_id, rowid`).all(tag) as LedgerRowText[],
    );
    return rows.map(entryFromRow);
  }

  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    const select = (where: string, ...args: unknown[]) =>
      this.run(
        () => this.prepare(`SELECT ${LEDGER_COLUMNS} FROM sequoia_ledger WHERE tag = ? AND ${where}`).all(tag, ...args) as LedgerRowText[],
      ).map(entryFromRow);
    return ledgerPageByFirst(
      cursor,
      limit,
      async (first, n) => select('first_id >= ? ORDER BY first_id LIMIT ?', first, n),
      async (first) => select('first_id = ?', first),
    );
  }

  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    return ledgerTopFromRow(
      this.run(() => this.prepare(ledgerTopSql('sequoia_ledger', 'TEXT')).get(tag) as Parameters<typeof ledgerTopFromRow>[0]),
    );
  }

  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    return this.run(
      () =>
        this.prepare(
          'DELETE FROM sequoia_ledger WHERE rowid IN (SELECT rowid FROM sequoia_ledger WHERE at_ms < ? ORDER BY at_ms LIMIT ?)',
        ).run(BigInt(beforeMs), limit).changes,
    );
  }

  async ping(): Promise<void> {
    this.run(() => this.prepare('SELECT 1').get());
  }

  /** Inside the caller's transaction: the ledger row commits with the range or not at all. */
  private record(values: unknown[]): void {
    if (!this.recording) return;
    this.prepare(`INSERT INTO sequoia_ledger (${LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...values);
  }

  async close(): Promise<void> {
    if (this.db) this.connection.release();
    this.db = undefined;
  }

  /** Every statement reads max_id and friends as 64-bit integers (bigint); on the handle `open` chose for this operation. */
  private prepare(sql: string): Database.Statement {
    return this.handle().prepare(sql).safeIntegers(true);
  }

  private handle(): Database.Database {
    if (!this.db) throw new UnavailableError('STORE_UNAVAILABLE', 'the SQLite store is not open');
    return this.db;
  }

  /** Once per operation, before its statements: the file now at the path (see sqlite-connection.ts). */
  private open(): Database.Database {
    if (!this.db) throw new UnavailableError('STORE_UNAVAILABLE', 'the SQLite store is not open');
    this.db = this.connection.current();
    return this.db;
  }

  private run<T>(fn: () => T): T {
    return storeCall(BACKEND, () => {
      this.open();
      return fn();
    });
  }
}

function toInfo(r: Row): TagInfo {
  return {
    tag: r.tag,
    maxId: r.max_id,
    step: Number(r.step),
    description: r.description,
    updatedAt: new Date(Number(r.updated_at)),
    fenceEpoch: Number(r.fence_epoch),
    generation: String(r.generation),
  };
}

const wrap = (e: unknown): SequoiaError => storeError(BACKEND, e);
