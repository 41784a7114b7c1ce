/**
 * The segment store as the simulated servers reach it: ONE MemorySegmentStore
 * (the production class, the truth) behind a network of simulated latency,
 * with faults: unavailable, an answer lost after its commit was applied, an
 * answer delayed past the caller's timeout, and a restore to an earlier
 * snapshot. Each server process talks to it through its own `StoreLink`,
 * whose answers are events of that process (dropped if it crashed, held
 * while it is paused).
 */
import { UnavailableError } from '../../src/core/errors.js';
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../src/ports/segment-store.js';
import type { LedgerEntry, LedgerTop } from '../../src/ports/range-ledger.js';
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';
import { NetworkLink, type NetworkFaults } from './network.js';

/** What a delivered allocation is judged by: the lineage of the tag when the store applied it. */
export interface Delivered {
  readonly proc: Proc;
  readonly tag: string;
  readonly start: bigint;
  readonly end: bigint;
  readonly lineage: number;
  readonly generation: string;
}

export class StoreModel {
  readonly db = new MemorySegmentStore({ identity: { host: 'sim-store', pid: 1, instance: 'sim', version: 'sim' } });
  readonly faults: NetworkFaults = { unavailable: false, loseAnswers: 0, delayAnswers: 0 };
  /**
   * Per tag: bumped by every event after which the store may hand out a range
   * again (a restore lowering max_id, a re-creation below the name's history).
   * Two answers of one ID within one lineage are a repeat whoever answered them.
   */
  readonly lineage = new Map<string, number>();
  /** Per tag: rollbacks the servers are right to refuse (restores, low re-creations). */
  readonly rollbacks = new Map<string, number>();
  /** Plant `giveback-no-generation`: the give-back's compare-and-set skips the generation, as before issue 28. */
  ignoreGenerationOnGiveBack = false;
  onDelivered: (d: Delivered) => void = () => {};
  private snapshots: Array<{
    at: number;
    rows: Map<string, { maxId: bigint; generation: string }>;
    /** The ledger rows that existed then (a restore with the ledger keeps only these). */
    ledger: ReadonlySet<LedgerEntry>;
  }> = [];

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {}

  bump(tag: string): void {
    this.lineage.set(tag, (this.lineage.get(tag) ?? 0) + 1);
    this.rollbacks.set(tag, (this.rollbacks.get(tag) ?? 0) + 1);
  }

  /** Per tag: max_id after each change the servers or operators made, with its time (what a lagging replica lacks). */
  private readonly history = new Map<string, Array<{ at: number; maxId: bigint; generation: string }>>();

  /** Records the row as a change left it (called after every write). */
  async noteWrite(tag: string): Promise<void> {
    const row = await this.db.getTag(tag);
    if (!row) return;
    let h = this.history.get(tag);
    if (!h) this.history.set(tag, (h = []));
    h.push({ at: this.sched.now, maxId: row.maxId, generation: row.generation });
    if (h.length > 64) h.splice(0, 32);
  }

  /**
   * A failover to an asynchronous replica `lagMs` behind: every tag loses the
   * writes of its last `lagMs` (within one creation of the tag). Answers what it did.
   */
  async failover(lagMs: number): Promise<string[]> {
    const done: string[] = [];
    for (const [tag, h] of this.history) {
      const cur = await this.db.getTag(tag);
      if (!cur) continue;
      const before = [...h].reverse().find((x) => x.at <= this.sched.now - lagMs);
      if (!before || before.generation !== cur.generation || before.maxId >= cur.maxId) continue;
      this.db.restore(tag, before.maxId);
      this.bump(tag);
      done.push(`${tag} ${cur.maxId}->${before.maxId}`);
    }
    return done;
  }

  async snapshot(): Promise<void> {
    const rows = new Map<string, { maxId: bigint; generation: string }>();
    for (const t of await this.db.listTags()) rows.set(t.tag, { maxId: t.maxId, generation: t.generation });
    this.snapshots.push({ at: this.sched.now, rows, ledger: new Set(this.ledgerRows()) });
    if (this.snapshots.length > 30) this.snapshots.shift();
  }

  /** The memory store's own ledger (a private field), oldest first. */
  private ledgerRows(): LedgerEntry[] {
    return (this.db as unknown as { readonly ledger: LedgerEntry[] }).ledger;
  }

  /**
   * Restores one tag's row to a snapshot taken `back` ms ago or earlier;
   * `withLedger`: the tag's ledger rows written since go too, as a restore
   * of the whole database takes them. Answers what it did.
   */
  async restore(tag: string, backMs: number, withLedger = false): Promise<string | undefined> {
    const snap = [...this.snapshots].reverse().find((s) => s.at <= this.sched.now - backMs);
    const old = snap?.rows.get(tag);
    const cur = await this.db.getTag(tag);
    if (!old || !cur || cur.generation !== old.generation || old.maxId >= cur.maxId) return undefined;
    this.db.restore(tag, old.maxId);
    this.bump(tag);
    if (!withLedger || !snap) return `${tag} max_id ${cur.maxId} -> ${old.maxId}`;
    const rows = this.ledgerRows();
    const kept = rows.filter((e) => e.tag !== tag || snap.ledger.has(e));
    (this.db as unknown as { ledger: LedgerEntry[] }).ledger = kept;
    return `${tag} max_id ${cur.maxId} -> ${old.maxId}, ${rows.length - kept.length} ledger rows gone`;
  }

  /**
   * Whether the store's ledger holds the row of an allocation just applied.
   * Read newest first off the memory store's own ledger (a private field):
   * the row sought is almost always the last, where `rangesContaining`
   * scanned the whole ledger for every delivery.
   */
  hasAllocation(d: Delivered): boolean {
    const ledger = this.ledgerRows();
    const last = d.end - 1n;
    for (let i = ledger.length - 1; i >= 0; i--) {
      const e = ledger[i] as LedgerEntry;
      if (e.tag === d.tag && e.first === d.start && e.last === last && e.kind === 'allocate' && e.generation === d.generation) return true;
    }
    return false;
  }

  linkFor(proc: Proc): StoreLink {
    return new StoreLink(this, proc, this.sched, this.rng);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    if (this.ignoreGenerationOnGiveBack) {
      const row = await this.db.getTag(tag);
      if (row) expect = { ...expect, generation: row.generation };
    }
    return this.db.giveBack(tag, from, expect);
  }
}

const unavailable = (what: string) => new UnavailableError('STORE_UNAVAILABLE', `sim store: ${what}`, { retryAfterMs: 1000 });

/** One process's connection: every call crosses the simulated network both ways. */
export class StoreLink extends NetworkLink implements SegmentStore {
  readonly kind = 'sim';
  constructor(
    private readonly model: StoreModel,
    proc: Proc,
    sched: Scheduler,
    rng: Prng,
  ) {
    super(proc, sched, rng, model.faults, unavailable);
  }

  async init(): Promise<void> {}
  allocate(tag: string, step?: number): Promise<Allocation> {
    let lineage = 0;
    return this.call(
      () => {
        lineage = this.model.lineage.get(tag) ?? 0;
        return this.model.db.allocate(tag, step);
      },
      (a) => {
        void this.model.noteWrite(tag);
        this.model.onDelivered({
          proc: this.proc,
          tag,
          start: a.maxId - BigInt(a.step),
          end: a.maxId,
          lineage,
          generation: a.generation,
        });
      },
    );
  }
  getTag(tag: string): Promise<TagInfo | undefined> {
    return this.call(() => this.model.db.getTag(tag));
  }
  listTags(): Promise<TagInfo[]> {
    return this.call(() => this.model.db.listTags());
  }
  createTag(tag: NewTag): Promise<TagInfo> {
    return this.call(() => this.model.db.createTag(tag));
  }
  updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    return this.call(() => this.model.db.updateTag(tag, update));
  }
  deleteTag(tag: string): Promise<void> {
    return this.call(() => this.model.db.deleteTag(tag));
  }
  fence(tag: string, to: bigint): Promise<TagInfo> {
    return this.call(
      () => this.model.db.fence(tag, to),
      () => void this.model.noteWrite(tag),
    );
  }
  giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    return this.call(
      () => this.model.giveBack(tag, from, expect),
      (ok) => {
        this.sched.log(`give-back ${this.proc.name} ${tag} [${from},${expect.maxId}) ${ok ? 'taken' : 'refused'}`);
        void this.model.noteWrite(tag);
      },
    );
  }
  ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    return this.call(() => this.model.db.ledgerTop(tag));
  }
  ping(): Promise<void> {
    return this.call(() => this.model.db.ping());
  }
  async close(): Promise<void> {}
}
