/** WorkerLeaseStore in memory (one process; tests and `memory:` stores), its lease ledger an array. */
import type { LeaseEventKind, LeaseHolder, LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, LeaseRecord, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/choose-worker.js';
import { HELD_FOR_GOOD_TICK, covers, firstTick, holderOf, holdingsFromEntries, takeKind } from '../kit/lease-ledger-rules.js';

interface Row {
  workerId: number;
  owner: string;
  generation: number;
  expiresAtMs: number;
  lastTick: number;
}

export class MemoryWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'memory';
  private readonly spaces = new Map<string, Map<number, Row>>();
  private ledger: LeaseLedgerEntry[] = [];
  private nodes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async init(): Promise<void> {}

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    const now = this.now();
    const c = chooseWorker([...this.rows(req.space).values()], now, req);
    if ('refused' in c) return c;
    const kind = takeKind(this.rows(req.space).get(c.workerId));
    const row = this.take(req.space, c.workerId, req.owner, now + req.ttlMs);
    const from = firstTick(req.nowTick, row.lastTick);
    this.record(req.space, row, kind, holderOf(req.owner, req.holder), from, from - 1);
    return { workerId: row.workerId, generation: row.generation, lastTick: row.lastTick, expiresAtMs: row.expiresAtMs };
  }

  async renew(
    space: string,
    workerId: number,
    owner: string,
    generation: number,
    ttlMs: number,
    lastTick: number,
  ): Promise<LeaseRecord | undefined> {
    const r = this.rows(space).get(workerId);
    if (!r || r.owner !== owner || r.generation !== generation) return undefined;
    r.expiresAtMs = this.now() + ttlMs;
    r.lastTick = Math.max(r.lastTick, lastTick);
    this.recordAfter(space, r, 'renew', r.lastTick);
    return { workerId, generation, lastTick: r.lastTick, expiresAtMs: r.expiresAtMs };
  }

  async release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void> {
    const r = this.rows(space).get(workerId);
    if (!r || r.owner !== owner || r.generation !== generation) return;
    r.expiresAtMs = 0;
    r.lastTick = lastTick;
    this.recordAfter(space, r, 'release', lastTick);
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    const now = this.now();
    for (;;) {
      const id = ++this.nodes;
      if (id >= workerCount) return { workerId: id, lastTick: -1 };
      const prev = this.rows(space).get(id);
      if (prev && prev.expiresAtMs > now) continue;
      const kind = takeKind(prev);
      const owner = nodeOwner(host);
      const row = this.take(space, id, owner, CLAIMED_FOR_GOOD_MS);
      this.record(space, row, kind, holderOf(owner, undefined), firstTick(undefined, row.lastTick), HELD_FOR_GOOD_TICK);
      return { workerId: id, lastTick: row.lastTick };
    }
  }

  async holdersAt(space: string, workerId: number, tick: number): Promise<readonly LeaseHolding[]> {
    return holdingsFromEntries(await this.entries(space, workerId)).filter((h) => covers(h, tick));
  }

  async holdings(space: string): Promise<readonly LeaseHolding[]> {
    return holdingsFromEntries(this.ledger.filter((e) => e.space === space));
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return this.ledger.filter((e) => e.space === space && e.workerId === workerId);
  }

  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    const before = this.now() - retentionMs;
    let n = 0;
    this.ledger = this.ledger.filter((e) => {
      const drop = n < limit && e.atMs < before && e.untilTick < HELD_FOR_GOOD_TICK;
      if (drop) n++;
      return !drop;
    });
    return n;
  }

  async close(): Promise<void> {}

  /** Test-only: the raw row. */
  peek(space: string, workerId: number): Readonly<Row> | undefined {
    return this.rows(space).get(workerId);
  }

  /** Gives the id to `owner` (a new generation), keeping the last tick. */
  private take(space: string, workerId: number, owner: string, expiresAtMs: number): Row {
    const prev = this.rows(space).get(workerId);
    const row: Row = { workerId, owner, generation: (prev?.generation ?? 0) + 1, expiresAtMs, lastTick: prev?.lastTick ?? -1 };
    this.rows(space).set(workerId, row);
    return row;
  }

  private record(space: string, r: Row, kind: LeaseEventKind, holder: LeaseHolder, fromTick: number, untilTick: number): void {
    this.ledger.push({
      space,
      workerId: r.workerId,
      generation: r.generation,
      kind,
      owner: r.owner,
      holder,
      fromTick,
      untilTick,
      atMs: this.now(),
    });
  }

  private recordAfter(space: string, r: Row, kind: LeaseEventKind, untilTick: number): void {
    const prev = this.ledger.findLast((e) => e.space === space && e.workerId === r.workerId && e.generation === r.generation);
    this.record(space, r, kind, prev?.holder ?? holderOf(r.owner, undefined), prev?.fromTick ?? untilTick, untilTick);
  }

  private rows(space: string): Map<number, Row> {
    let m = this.spaces.get(space);
    if (!m) this.spaces.set(space, (m = new Map()));
    return m;
  }
}
