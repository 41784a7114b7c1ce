/** WorkerLeaseStore in memory (one process; tests and `memory:` stores), its lease ledger an array. */
import type { LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/lease/choose-worker.js';
import {
  HELD_FOR_GOOD_TICK,
  type LedgerRow,
  claimRow,
  followingRow,
  grantRow,
  granted,
  holdingsFromEntries,
} from '../kit/lease/lease-ledger-rules.js';

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
    const rows = [...this.rows(req.space).values()];
    const c = chooseWorker(rows, now, req);
    if ('refused' in c) return c;
    const taken = this.take(req.space, c.workerId, req.owner, now + req.ttlMs);
    this.record(grantRow(req, c.workerId, taken, rows));
    return granted(c.workerId, taken, taken.expiresAtMs);
  }

  async renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const r = this.held(lease);
    if (!r) return undefined;
    r.expiresAtMs = this.now() + ttlMs;
    r.lastTick = Math.max(r.lastTick, lastTick);
    this.recordAfter(lease, 'renew', r.lastTick);
    return { workerId: r.workerId, generation: r.generation, lastTick: r.lastTick, expiresAtMs: r.expiresAtMs };
  }

  async release(lease: HeldLease, lastTick: number): Promise<void> {
    const r = this.held(lease);
    if (!r) return;
    r.expiresAtMs = 0;
    r.lastTick = lastTick;
    this.recordAfter(lease, 'release', lastTick);
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    const now = this.now();
    for (;;) {
      const id = ++this.nodes;
      if (id >= workerCount) return { workerId: id, lastTick: -1 };
      const prev = this.rows(space).get(id);
      if (prev && prev.expiresAtMs > now) continue;
      const owner = nodeOwner(host);
      const taken = this.take(space, id, owner, CLAIMED_FOR_GOOD_MS);
      this.record(claimRow(space, id, owner, taken, prev));
      return { workerId: id, lastTick: taken.lastTick };
    }
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    return holdingsFromEntries(this.ledger.filter((e) => e.space === space && (workerId === undefined || e.workerId === workerId)));
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

  /** The row of `lease` while its owner and generation still hold it. */
  private held(lease: HeldLease): Row | undefined {
    const r = this.rows(lease.space).get(lease.workerId);
    return r && r.owner === lease.owner && r.generation === lease.generation ? r : undefined;
  }

  private record(row: LedgerRow): void {
    this.ledger.push({ ...row, atMs: this.now() });
  }

  private recordAfter(lease: HeldLease, kind: 'renew' | 'release', untilTick: number): void {
    const latest = this.ledger.findLast(
      (e) => e.space === lease.space && e.workerId === lease.workerId && e.generation === lease.generation,
    );
    this.record(followingRow(lease, kind, untilTick, latest));
  }

  private rows(space: string): Map<number, Row> {
    let m = this.spaces.get(space);
    if (!m) this.spaces.set(space, (m = new Map()));
    return m;
  }
}
