/**
 * The segment store on another system's own table (Leaf's `leaf_alloc`,
 * Tinyid's `tiny_id_info`), whatever the SQL database: what the four such
 * stores (Leaf and Tinyid, on MySQL and on PostgreSQL) do alike is written
 * here once. Each is built from two parts that hold what differs:
 *
 * - the peer table (`PeerTable`, made by its `PeerSchema`: kit/peer/leaf-table.ts,
 *   kit/peer/tinyid-table.ts): its statements in each dialect, the peer's own
 *   allocation, how its max_id maps onto Sequoia's ranges;
 * - the database (`SqlPool`, kit/sql/sql-database.ts: MysqlPool in
 *   mysql/mysql-connection.ts, PostgresPool in postgres/postgres-connection.ts):
 *   the pool and its transactions.
 *
 * Every write to the peer row runs in one transaction with the side-table
 * statement that goes with it (kit/peer/side-table.ts), the peer row's lock taken
 * first: a creation writes a fresh generation, a deletion renews it, a fence
 * raises the fence epoch, a give-back compares both under the row's lock.
 */
import { InvalidArgumentError, TagExistsError, TagNotFoundError } from '../../../core/errors.js';
import type {
  Allocation,
  GiveBackExpectation,
  NewTag,
  RetiringStore,
  SegmentStore,
  TagInfo,
  TagUpdate,
} from '../../../ports/segment-store.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, readBack, stillAsExpected } from '../segment/segment-rules.js';
import { type ForeignSchema, type ForeignTableOptions, type SideState, SideTable, type SqlDialect } from './side-table.js';
import type { RunSql, SqlPool } from '../sql/sql-database.js';

/** A peer table's statements in one dialect, those the store runs itself. */
export interface PeerStatements {
  /** The peer row's columns a joined SELECT reads (the table's alias there: `f`). */
  readonly columns: string;
  /** A row as the peer's admins make one. Values: PeerTable.insertValues. */
  readonly insert: string;
  /** Values: PeerTable.updateValues. */
  readonly update: string;
  /** Values: [tag]. */
  readonly remove: string;
  /** Raises max_id to at least the value. Values: [max_id, tag]. */
  readonly fence: string;
  /** The row, locked for the transaction (what PeerTable.endOf reads). Values: [tag]. */
  readonly lock: string;
  /** Values: [max_id, tag]. */
  readonly set: string;
  /** Renames the row (`sequoia migrate` retiring it). Values: [new name, tag]. */
  readonly retire: string;
}

/** What a peer's table is in one SQL dialect: its statements and its rules. */
export interface PeerTable {
  readonly sql: PeerStatements;
  /** One allocation as the peer's own code makes it, in the caller's transaction; the side state is read after it. */
  allocate(run: RunSql, tag: string, step: number | undefined): Promise<Omit<Allocation, keyof SideState>>;
  insertValues(t: NewTag, start: bigint): unknown[];
  /** The step counts IDs; the description is here only where the peer table has the column. */
  updateValues(tag: string, update: TagUpdate): unknown[];
  /** The peer's max_id that makes the next range start at `end` (a fence, a give-back). */
  maxIdFor(end: bigint): bigint;
  /** Where the next range starts, for a row `sql.lock` read. */
  endOf(row: unknown): bigint;
  /** A row of the joined SELECT (peer columns and side state). */
  tagInfo(row: unknown): TagInfo;
}

/** A peer's table as a schema: its side table's names and its statements in each dialect. */
export interface PeerSchema extends ForeignSchema {
  /**
   * The peer allocates optimistically (Tinyid's `version` update, retried):
   * an allocation runs READ COMMITTED, and one at a time per tag in this process.
   */
  readonly optimistic: boolean;
  table(name: string, dialect: SqlDialect): PeerTable;
}

/** What one of the four stores is made of. */
export interface PeerStoreParts {
  readonly kind: string;
  readonly schema: PeerSchema;
  readonly dialect: SqlDialect;
  /** Opened once the table names are checked. */
  readonly open: () => SqlPool;
  /** What the error for a missing peer table says to do: `create it with Leaf's scripts/leaf_alloc.sql (see docs/migrate.md)`. */
  readonly howToCreate: string;
}

export class PeerSegmentStore implements SegmentStore, RetiringStore {
  readonly kind: string;
  readonly table: string;
  private readonly side: SideTable;
  private readonly peer: PeerTable;
  private readonly optimistic: boolean;
  private readonly selects: { readonly one: string; readonly all: string };
  private readonly howToCreate: string;
  private readonly db: SqlPool;
  private readonly queue = new PerTagQueue();
  private initialised = false;
  private closing: Promise<void> | undefined;

  constructor(parts: PeerStoreParts, options: ForeignTableOptions) {
    this.kind = parts.kind;
    this.side = new SideTable(parts.schema, options, parts.dialect);
    this.table = this.side.foreign;
    this.peer = parts.schema.table(this.table, parts.dialect);
    this.optimistic = parts.schema.optimistic;
    this.selects = this.side.joined(this.peer.sql.columns);
    this.howToCreate = parts.howToCreate;
    this.db = parts.open();
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    const missing = `${this.db.backend}: table ${this.table} not found; ${this.howToCreate} or fix ?table=`;
    await this.db.migration((run) => this.side.ensure(run, missing));
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    return this.optimistic ? this.queue.run(tag, () => this.allocateNow(tag, step)) : this.allocateNow(tag, step);
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const [row] = (await this.db.run(this.selects.one, [this.table, tag])).rows;
    return row ? this.peer.tagInfo(row) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    return (await this.db.run(this.selects.all, [this.table])).rows.map((row) => this.peer.tagInfo(row));
  }

  /** The peer row as its admins make one; the side row gets a new generation (and the description, where it keeps it). */
  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    await this.db.transaction(async (run) => {
      try {
        await run(this.peer.sql.insert, this.peer.insertValues(t, start));
      } catch (e) {
        throw this.refused(e, t.tag) ?? e;
      }
      await this.side.created(run, t.tag);
      if (this.side.describes) await this.side.described(run, t.tag, t.description ?? '');
    });
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    await this.onRow(tag, this.peer.sql.update, this.peer.updateValues(tag, update), async (run) => {
      if (this.side.describes && update.description !== undefined) await this.side.described(run, tag, update.description);
    });
    return readBack(this, tag);
  }

  /**
   * Deletes the peer row, as the peer's admins would, and gives the side row
   * a new generation (its fence epoch and description stay): the peer's
   * admins create rows again with an INSERT that Sequoia never sees, and that
   * row must not pass for the deleted one in a give-back.
   */
  async deleteTag(tag: string): Promise<void> {
    await this.onRow(tag, this.peer.sql.remove, [tag], (run) => this.side.deleted(run, tag));
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    await this.onRow(tag, this.peer.sql.fence, [this.peer.maxIdFor(to).toString(), tag], (run) => this.side.fenced(run, tag));
    return readBack(this, tag);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    return this.db.transaction(async (run) => {
      // The peer row's lock first (every allocator and every fence takes it), then the side row.
      const [row] = (await run(this.peer.sql.lock, [tag])).rows;
      if (!row || this.peer.endOf(row) !== expect.maxId) return false;
      if (!stillAsExpected({ maxId: expect.maxId, ...(await this.side.read(run, tag, true)) }, expect)) return false;
      if (from !== expect.maxId) await run(this.peer.sql.set, [this.peer.maxIdFor(from).toString(), tag]);
      return true;
    });
  }

  /**
   * The row's lock first: every allocator takes it (Leaf's UPDATE, Tinyid's
   * optimistic update, Sequoia's own), so the row read here is the last one
   * any of them moved, and none moves it again before the rename commits;
   * after it, their loads find no row. The side row gets a new generation, as
   * a deletion gives it: a row inserted again under the old name is another
   * creation.
   */
  async retireTag(tag: string, retiredName: string, check: (locked: TagInfo) => void): Promise<TagInfo> {
    return this.db.transaction(async (run) => {
      if ((await run(this.peer.sql.lock, [tag])).rows.length === 0) throw new TagNotFoundError(tag);
      const locked = this.peer.tagInfo((await run(this.selects.one, [this.table, tag])).rows[0]);
      check(locked);
      let count: number;
      try {
        count = (await run(this.peer.sql.retire, [retiredName, tag])).count;
      } catch (e) {
        throw this.refusedName(e, tag, retiredName) ?? e;
      }
      // MySQL without strict mode cuts a name too long for the column instead of refusing it: the row must be found under the new name only.
      const [stays] = (await run(this.selects.one, [this.table, tag])).rows;
      const [moved] = (await run(this.selects.one, [this.table, retiredName])).rows;
      if (count !== 1 || stays !== undefined || moved === undefined || this.peer.tagInfo(moved).maxId !== locked.maxId) {
        throw new InvalidArgumentError(
          `tag ${JSON.stringify(tag)}: ${this.table} did not take the name ${JSON.stringify(retiredName)} (a ${this.side.tagColumn} column too short?)`,
        );
      }
      await this.side.deleted(run, tag);
      return locked;
    }, true);
  }

  async ping(): Promise<void> {
    await this.db.run('SELECT 1');
  }

  /** Once: a second call waits for the first. */
  close(): Promise<void> {
    this.closing ??= this.db.release();
    return this.closing;
  }

  private allocateNow(tag: string, step: number | undefined): Promise<Allocation> {
    return this.db.transaction(
      async (run) => ({ ...(await this.peer.allocate(run, tag, step)), ...(await this.side.read(run, tag)) }),
      this.optimistic,
    );
  }

  /** `write` on the tag's peer row, then `after` on its side row, in one transaction; TAG_NOT_FOUND when the write finds no row. */
  private onRow(tag: string, write: string, values: unknown[], after: (run: RunSql) => Promise<void>): Promise<void> {
    return this.db.transaction(async (run) => {
      if ((await run(write, values)).count === 0) throw new TagNotFoundError(tag);
      await after(run);
    });
  }

  /** The database refused a retired name: a row of that name is there already, or the name is longer than the column. */
  private refusedName(e: unknown, tag: string, retiredName: string): Error | undefined {
    const code = (e as { code?: unknown }).code;
    const what = `tag ${JSON.stringify(tag)}: cannot rename its row to ${JSON.stringify(retiredName)}`;
    if (code === 'ER_DUP_ENTRY' || code === '23505')
      return new InvalidArgumentError(`${what}: ${this.table} has a row of that name already`);
    if (code === 'ER_DATA_TOO_LONG' || code === '22001') {
      return new InvalidArgumentError(`${what}: longer than ${this.table}.${this.side.tagColumn} allows`);
    }
    return undefined;
  }

  /** The database refused a new peer row: its tag is there already, or longer than the peer's column. */
  private refused(e: unknown, tag: string): Error | undefined {
    const code = (e as { code?: unknown }).code;
    if (code === 'ER_DUP_ENTRY' || code === '23505') return new TagExistsError(tag);
    if (code === 'ER_DATA_TOO_LONG' || code === '22001') {
      return new InvalidArgumentError(`tag: longer than ${this.table}.${this.side.tagColumn} allows`);
    }
    return undefined;
  }
}

/**
 * One allocation per tag at a time within a store: an optimistic update
 * only lets one of a row's concurrent allocators win, so this process's own
 * callers wait in line instead of racing each other (and the row's other
 * servers) on the database.
 */
class PerTagQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(tag: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(tag) ?? Promise.resolve();
    const mine = before.then(fn, fn);
    const tail = mine.catch(() => {});
    this.tails.set(tag, tail);
    void tail.then(() => {
      if (this.tails.get(tag) === tail) this.tails.delete(tag);
    });
    return mine;
  }
}
