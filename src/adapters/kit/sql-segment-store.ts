/**
 * The segment store on Sequoia's own table in a SQL database, whatever the
 * dialect: the rules (input checks, the stored-ID range check, what a
 * missing row or a full ID space answers, the ledger row of each write, the
 * read-back) are written here once. A dialect supplies its statements
 * (`SegmentStatements`) and its pool (`PeerDatabase`, the same one the stores
 * on a peer's table use: postgres/postgres-connection.ts). Each write and its
 * ledger row commit together: one statement where the dialect can say it in
 * one (allocate, give-back), else one transaction with the row locked first.
 */
import { TagExistsError, TagNotFoundError } from '../../core/errors.js';
import type { LedgerEntry, LedgerPage, LedgerTop, ServerIdentity } from '../../ports/range-ledger.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import type { PeerDatabase } from './peer-store.js';
import {
  entryFromRow,
  fencedRange,
  identityValues,
  type LedgerRowText,
  ledgerTopFromRow,
  rangeLength,
  sqlLedgerPage,
} from './range-ledger.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, DEFAULT_STEP, exhausted, newGeneration } from './segment-rules.js';
import type { RunSql } from './side-table.js';
import { tagInfoFromTextRow, type TextTagRow } from './store-boundary.js';

/** One dialect's statements on one table and its ledger (names checked, see ledgerPlace). Values are listed per statement. */
export interface SegmentStatements {
  /** Creates or migrates the table and the ledger, under the database's migration lock. */
  migrate(run: RunSql): Promise<void>;
  /** [tag, step or null, host, pid, instance, version, record ledger]: max_id, step, fence_epoch, generation, applied; no row when the tag is missing or the ID space full. */
  readonly allocate: string;
  /** [tag]: the row (TextTagRow). */
  readonly get: string;
  /** The rows in byte order of tag. */
  readonly list: string;
  /** [tag, start, step, description, generation]. */
  readonly create: string;
  /** [tag, step or null, description or null]: the row; none when missing. */
  readonly update: string;
  /** [tag]: a row when one was deleted. */
  readonly remove: string;
  /** [tag]: max_id, the row locked for the transaction. */
  readonly lock: string;
  /** [tag, to]: the row after max_id was raised to at least `to` and the fence epoch bumped. */
  readonly fence: string;
  /** [tag, kind, first, last, step, host, pid, instance, version, fence epoch, generation]: one ledger row, at the database's clock. */
  readonly record: string;
  /** [tag, expected max_id, from, fence epoch, generation, host, pid, instance, version]: a row when it gave back (with its ledger row). */
  readonly giveBack: string;
  /** [tag, id, id]. */
  readonly ranges: string;
  /** [tag]. */
  readonly entries: string;
  /** The page's two WHERE conditions after `tag = ? AND`, and the SELECT they end. */
  readonly page: { readonly select: string; readonly from: string; readonly at: string };
  /** [tag]: top and since, as text. */
  readonly top: string;
  /** [before ms, limit]: one row, `n`, how many it deleted. */
  readonly prune: string;
}

export interface SqlSegmentStoreParts {
  readonly kind: string;
  readonly table: string;
  readonly sql: SegmentStatements;
  readonly db: PeerDatabase;
  readonly who: ServerIdentity;
  /** False only in the benchmark that measures the ledger's cost. */
  readonly recording: boolean;
  /** The database's code for a duplicate key. */
  readonly duplicate: string;
}

interface AllocatedRow {
  max_id: string;
  step: number | string;
  fence_epoch: number | string;
  generation: string;
  applied: number | string;
}

export class SqlSegmentStore implements SegmentStore {
  readonly kind: string;
  readonly table: string;
  private readonly sql: SegmentStatements;
  private readonly db: PeerDatabase;
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
    await this.db.migration((run) => this.sql.migrate(run));
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    const [row] = (await this.db.select(this.sql.allocate, [
      tag,
      step ?? null,
      ...identityValues(this.who),
      this.recording,
    ])) as AllocatedRow[];
    if (row) {
      const storedStep = Number(row.step);
      return {
        maxId: BigInt(row.max_id),
        step: Number(row.applied),
        storedStep,
        fenceEpoch: Number(row.fence_epoch),
        generation: String(row.generation),
      };
    }
    // No row matched: either the tag is missing or the sum would pass 2^63-1.
    if ((await this.getTag(tag)) === undefined) throw new TagNotFoundError(tag);
    throw exhausted(tag);
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const [row] = await this.db.select(this.sql.get, [tag]);
    return row ? tagInfoFromTextRow(row as TextTagRow) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    return (await this.db.select(this.sql.list)).map((r) => tagInfoFromTextRow(r as TextTagRow));
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    const values = [t.tag, start.toString(), t.step ?? DEFAULT_STEP, t.description ?? '', newGeneration()];
    try {
      const [row] = await this.db.select(this.sql.create, values);
      return tagInfoFromTextRow(row as TextTagRow);
    } catch (e) {
      if ((e as { cause?: { code?: unknown } }).cause?.code === this.duplicate) throw new TagExistsError(t.tag);
      throw e;
    }
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const [row] = await this.db.select(this.sql.update, [tag, update.step ?? null, update.description ?? null]);
    if (!row) throw new TagNotFoundError(tag);
    return tagInfoFromTextRow(row as TextTagRow);
  }

  async deleteTag(tag: string): Promise<void> {
    if ((await this.db.select(this.sql.remove, [tag])).length === 0) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    // One transaction: the row lock taken by the first read holds allocators off until the ledger row is written.
    const row = await this.db.transaction(async (run) => {
      const [old] = (await run(this.sql.lock, [tag])).rows as { max_id: string }[];
      if (!old) return undefined;
      const [after] = (await run(this.sql.fence, [tag, to.toString()])).rows as TextTagRow[];
      const jumped = fencedRange(BigInt(old.max_id), to);
      if (jumped && after) {
        const range = [jumped.first.toString(), jumped.last.toString(), rangeLength(jumped)];
        await run(this.sql.record, [tag, 'fence', ...range, ...identityValues(this.who), after.fence_epoch, after.generation]);
      }
      return after;
    });
    if (!row) throw new TagNotFoundError(tag);
    return tagInfoFromTextRow(row);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    const values = [
      tag,
      expect.maxId.toString(),
      from.toString(),
      String(expect.fenceEpoch),
      expect.generation,
      ...identityValues(this.who),
    ];
    return (await this.db.select(this.sql.giveBack, values)).length === 1;
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    return this.ledgerRows(this.sql.ranges, [tag, id.toString(), id.toString()]);
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    return this.ledgerRows(this.sql.entries, [tag]);
  }

  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    const { select, from, at } = this.sql.page;
    return sqlLedgerPage(cursor, limit, { from, at }, (where, args) => this.db.select(`${select} ${where}`, [tag, ...args]));
  }

  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    const [row] = await this.db.select(this.sql.top, [tag]);
    return ledgerTopFromRow(row as Parameters<typeof ledgerTopFromRow>[0]);
  }

  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    const [row] = (await this.db.select(this.sql.prune, [String(beforeMs), limit])) as { n: number | string }[];
    return Number(row?.n ?? 0);
  }

  async ping(): Promise<void> {
    await this.db.select('SELECT 1');
  }

  /** Once: a second call waits for the first. */
  close(): Promise<void> {
    this.closing ??= this.db.release();
    return this.closing;
  }

  private async ledgerRows(sql: string, values: unknown[]): Promise<LedgerEntry[]> {
    return ((await this.db.select(sql, values)) as LedgerRowText[]).map(entryFromRow);
  }
}
