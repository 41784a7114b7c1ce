/** An in-process SegmentStore: for tests, embedding and single-process use without persistence. */
import { TagExistsError, TagNotFoundError } from '../../core/errors.js';
import { byFirst, MAX_ID } from '../../core/id.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import {
  assertGiveBack,
  assertStoredId,
  DEFAULT_START,
  DEFAULT_STEP,
  exhausted,
  newGeneration,
  stillAsExpected,
} from '../kit/segment/segment-rules.js';
import type { LedgerEntry, LedgerKind, LedgerPage, LedgerTop, ServerIdentity } from '../../ports/range-ledger.js';
import {
  allocatedRange,
  covers,
  fencedRange,
  givenBackRange,
  ledgerEntryFor,
  ledgerTopOf,
  processIdentity,
} from '../kit/segment/range-ledger.js';

interface Row {
  maxId: bigint;
  step: number;
  description: string;
  updatedAt: Date;
  fenceEpoch: number;
  generation: string;
}

export class MemorySegmentStore implements SegmentStore {
  readonly kind = 'memory';
  private readonly rows = new Map<string, Row>();
  private ledger: LedgerEntry[] = [];
  private readonly who: ServerIdentity;

  constructor(options: { readonly identity?: ServerIdentity } = {}) {
    this.who = options.identity ?? processIdentity();
  }

  async init(): Promise<void> {}

  async allocate(tag: string, step?: number): Promise<Allocation> {
    const row = this.rows.get(tag);
    if (!row) throw new TagNotFoundError(tag);
    const s = step ?? row.step;
    const next = row.maxId + BigInt(s);
    if (next > MAX_ID) throw exhausted(tag);
    row.maxId = next;
    row.updatedAt = new Date();
    this.record(tag, 'allocate', allocatedRange(next, s), row);
    return { maxId: next, step: s, storedStep: row.step, fenceEpoch: row.fenceEpoch, generation: row.generation };
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const row = this.rows.get(tag);
    return row ? info(tag, row) : undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    return [...this.rows.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([t, r]) => info(t, r));
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    if (this.rows.has(t.tag)) throw new TagExistsError(t.tag);
    const row: Row = {
      maxId: start,
      step: t.step ?? DEFAULT_STEP,
      description: t.description ?? '',
      updatedAt: new Date(),
      fenceEpoch: 0,
      generation: newGeneration(),
    };
    this.rows.set(t.tag, row);
    return info(t.tag, row);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const row = this.rows.get(tag);
    if (!row) throw new TagNotFoundError(tag);
    if (update.step !== undefined) row.step = update.step;
    if (update.description !== undefined) row.description = update.description;
    row.updatedAt = new Date();
    return info(tag, row);
  }

  async deleteTag(tag: string): Promise<void> {
    if (!this.rows.delete(tag)) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    const row = this.rows.get(tag);
    if (!row) throw new TagNotFoundError(tag);
    const jumped = fencedRange(row.maxId, to);
    if (to > row.maxId) row.maxId = to;
    row.fenceEpoch += 1;
    row.updatedAt = new Date();
    if (jumped) this.record(tag, 'fence', jumped, row);
    return info(tag, row);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    const row = this.rows.get(tag);
    if (!row || !stillAsExpected(row, expect)) return false;
    row.maxId = from;
    row.updatedAt = new Date();
    const range = givenBackRange(from, expect);
    if (range) this.record(tag, 'give-back', range, row);
    return true;
  }

  /** Test-only: overwrite max_id, as a restore from an old backup would. */
  restore(tag: string, maxId: bigint): void {
    const row = this.rows.get(tag);
    if (!row) throw new TagNotFoundError(tag);
    row.maxId = maxId;
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    return this.ledger.filter((e) => e.tag === tag && covers(e, id));
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    return this.ledger.filter((e) => e.tag === tag).sort(byFirst);
  }

  /** The cursor is an offset into the tag's entries in order of `first`. */
  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    const all = await this.ledgerEntries(tag);
    const from = Number(cursor ?? 0);
    return { entries: all.slice(from, from + limit), next: from + limit < all.length ? String(from + limit) : undefined };
  }

  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    return ledgerTopOf(this.ledger.filter((e) => e.tag === tag));
  }

  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    let n = 0;
    this.ledger = this.ledger.filter((e) => {
      if (e.atMs >= beforeMs || n >= limit) return true;
      n++;
      return false;
    });
    return n;
  }

  private record(tag: string, kind: LedgerKind, range: { first: bigint; last: bigint }, row: Row): void {
    this.ledger.push(ledgerEntryFor(tag, kind, range, this.who, Date.now(), row));
  }

  async ping(): Promise<void> {}
  async close(): Promise<void> {}
}

function info(tag: string, r: Row): TagInfo {
  return {
    tag,
    maxId: r.maxId,
    step: r.step,
    description: r.description,
    updatedAt: r.updatedAt,
    fenceEpoch: r.fenceEpoch,
    generation: r.generation,
  };
}
