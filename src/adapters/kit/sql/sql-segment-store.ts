/**
 * The segment store on Sequoia's own table in a SQL database, whatever the
 * dialect (SQLite, PostgreSQL, MySQL): the rules (input checks, the stored-ID
 * range check, what a missing row or a full ID space answers, the ledger row
 * of each write, the give-back's compare, the read-back) are written here
 * once. A dialect supplies its statements (`SegmentStatements`) and its
 * database (`SqlDatabase`, kit/sql/sql-database.ts: a pool, or SQLite's handle).
 * Each write and its ledger row commit together: an allocation is the
 * dialect's statements in one transaction, sent at once where it can (its
 * hot path); a fence and a give-back are steps of one transaction written
 * here, the row locked (or compared) by the first.
 */
import { TagExistsError, TagNotFoundError } from '../../../core/errors.js';
import type { LedgerEntry, LedgerKind, LedgerPage, LedgerTop, ServerIdentity } from '../../../ports/range-ledger.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../../ports/segment-store.js';
import {
  entryFromRow,
  fencedRange,
  givenBackRange,
  identityValues,
  ledgerPageByFirst,
  type LedgerRowText,
  ledgerTopFromRow,
  recordValues,
} from '../segment/range-ledger.js';
import {
  assertGiveBack,
  assertStoredId,
  DEFAULT_START,
  DEFAULT_STEP,
  exhausted,
  newGeneration,
  readBack,
} from '../segment/segment-rules.js';
import type { SqlDatabase, Steps } from './sql-database.js';
import { tagInfoFromTextRow, type TextTagRow } from '../connection/store-boundary.js';

/** One dialect's statements on one table and its ledger (names checked, see ledgerPlace). Values are listed per statement, as $1, $2… */
export interface SegmentStatements {
  /** Creates or migrates the table and the ledger. */
  migrate(): Steps<void>;
  /**
   * [tag, step or null, host, pid, instance, version, record ledger], run as
   * one transaction: the row moved by the step (or its own) and, when asked,
   * its ledger row (allocationRecordSql); the last answers max_id, step,
   * fence_epoch, generation, applied, and no row when the tag is missing or
   * the ID space full (max_id never passes 2^63-1).
   */
  readonly allocate: readonly string[];
  /** [tag]: the row (TextTagRow). */
  readonly get: string;
  /** The rows in byte order of tag. */
  readonly list: string;
  /** [tag, start, step, description, generation]. */
  readonly create: string;
  /** [tag, step or null, description or null]: counts the row. */
  readonly update: string;
  /** [tag]: counts the row. */
  readonly remove: string;
  /** [tag]: max_id, the row locked for the transaction. */
  readonly lock: string;
  /** [tag, to]: max_id raised to at least `to`, the fence epoch bumped. */
  readonly fence: string;
  /** [tag, expected max_id, from, fence epoch, generation]: max_id set to `from` where all three are as expected; counts the row. */
  readonly giveBack: string;
  /** recordValues: one ledger row, at the database's clock (recordSql). */
  readonly record: string;
  /** [tag, id, id]. */
  readonly ranges: string;
  /** [tag]. */
  readonly entries: string;
  /** `select` ends in `tag = $1 AND`; `from` [first, limit] and `at` [first] end it. */
  readonly page: { readonly select: string; readonly from: string; readonly at: string };
  /** [tag]: top and since (ledgerTopSql). */
  readonly top: string;
  /** [before ms, limit]: deletes the oldest rows; counts them. */
  readonly prune: string;
}

export interface SqlSegmentStoreParts {
  readonly kind: string;
  readonly table: string;
  readonly sql: SegmentStatements;
  readonly db: SqlDatabase;
  readonly who: ServerIdentity;
  /** False only in the benchmark that measures the ledger's cost. */
  readonly recording: boolean;
  /** The database's code for a duplicate key. */
  readonly duplicate: string;
}

interface AllocatedRow {
  max_id: string | bigint;
  step: number | string | bigint;
  fence_epoch: number | string | bigint;
  generation: string | bigint;
  applied: number | string | bigint;
}

export class SqlSegmentStore implements SegmentStore {
  readonly kind: string;
  readonly table: string;
  private readonly sql: SegmentStatements;
  private readonly db: SqlDatabase;
  private readonly who: ServerIdentity;
  private readonly recording: boolean;
  private readonly duplicate: string;
  private initialised = false;
  private closing: Promise<void> | undefined;

  constructor(parts: SqlSegmentStoreParts) {
    ({ kind: this.kind, table: this.table, sql: this.sql, db: this.db, who: this.who, recording: this.recording } = parts);
    this.duplicate = parts.duplicate;
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.db.migration(() => this.sql.migrate());
    this.initialised = true;
    this.closing = undefined;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    const values = [tag, step ?? null, ...identityValues(this.who), this.recording];
    const [row] = (await this.db.script(this.sql.allocate, values)) as AllocatedRow[];
    if (row) {
      const { max_id, fence_epoch, generation } = row;
      return {
        maxId: BigInt(max_id),
        step: Number(row.applied),
        storedStep: Number(row.step),
        fenceEpoch: Number(fence_epoch),
        generation: String(generation),
      };
    }
    // No row moved: either the tag is missing or the sum would pass 2^63-1.
    if ((await this.getTag(tag)) === undefined) throw new TagNotFoundError(tag);
    throw exhausted(tag);
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const [row] = (await this.db.run(this.sql.get, [tag])).rows;
    return row ? tagInfoFromTextRow(row as TextTagRow) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    return (await this.db.run(this.sql.list)).rows.map((r) => tagInfoFromTextRow(r as TextTagRow));
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    try {
      await this.db.run(this.sql.create, [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? '', newGeneration()]);
    } catch (e) {
      if ((e as { cause?: { code?: unknown } }).cause?.code === this.duplicate) throw new TagExistsError(t.tag);
      throw e;
    }
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const { count } = await this.db.run(this.sql.update, [tag, update.step ?? null, update.description ?? null]);
    if (count === 0) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async deleteTag(tag: string): Promise<void> {
    if ((await this.db.run(this.sql.remove, [tag])).count === 0) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    const after = await this.db.transaction(() => this.fenceSteps(tag, to));
    if (!after) throw new TagNotFoundError(tag);
    return after;
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    return this.db.transaction(() => this.giveBackSteps(tag, from, expect));
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    return this.ledgerRows(this.sql.ranges, [tag, id.toString(), id.toString()]);
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    return this.ledgerRows(this.sql.entries, [tag]);
  }

  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    const { select, from, at } = this.sql.page;
    const rows = (where: string, values: unknown[]) => this.ledgerRows(`${select} ${where}`, [tag, ...values]);
    return ledgerPageByFirst(
      cursor,
      limit,
      (first, n) => rows(from, [first.toString(), n]),
      (first) => rows(at, [first.toString()]),
    );
  }

  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    const [row] = (await this.db.run(this.sql.top, [tag])).rows;
    return ledgerTopFromRow(row as Parameters<typeof ledgerTopFromRow>[0]);
  }

  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    return (await this.db.run(this.sql.prune, [String(beforeMs), limit])).count;
  }

  async ping(): Promise<void> {
    await this.db.run('SELECT 1');
  }

  /** Once: a second call waits for the first. A store that initialises again after it opens again (SQLite's handle). */
  close(): Promise<void> {
    this.initialised = false;
    this.closing ??= this.db.release();
    return this.closing;
  }

  /** The row locked first: allocators wait until the ledger row of the jump is written. */
  private *fenceSteps(tag: string, to: bigint): Steps<TagInfo | undefined> {
    const [old] = (yield [this.sql.lock, [tag]]).rows as { max_id: string | bigint }[];
    if (!old) return undefined;
    yield [this.sql.fence, [tag, to.toString()]];
    const after = tagInfoFromTextRow((yield [this.sql.get, [tag]]).rows[0] as TextTagRow);
    const jumped = fencedRange(BigInt(old.max_id), to);
    if (jumped) yield* this.record(tag, 'fence', jumped, after);
    return after;
  }

  /** The compare and the set in one statement; the range's ledger row with it (the row was as expected, so its epoch and generation are). */
  private *giveBackSteps(tag: string, from: bigint, expect: GiveBackExpectation): Steps<boolean> {
    const values = [tag, expect.maxId.toString(), from.toString(), expect.fenceEpoch, expect.generation];
    if ((yield [this.sql.giveBack, values]).count !== 1) return false;
    const range = givenBackRange(from, expect);
    if (range) yield* this.record(tag, 'give-back', range, expect);
    return true;
  }

  private *record(
    tag: string,
    kind: LedgerKind,
    range: { first: bigint; last: bigint },
    row: Pick<TagInfo, 'fenceEpoch' | 'generation'>,
  ): Steps<void> {
    if (this.recording) yield [this.sql.record, recordValues(tag, kind, range, this.who, row)];
  }

  private async ledgerRows(sql: string, values: unknown[]): Promise<LedgerEntry[]> {
    return (await this.db.run(sql, values)).rows.map((r) => entryFromRow(r as LedgerRowText));
  }
}
