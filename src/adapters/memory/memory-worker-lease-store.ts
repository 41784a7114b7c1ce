/** WorkerLeaseStore in memory (one process; tests and `memory:` stores). */
import type { AcquireRequest, LeaseRecord, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/choose-worker.js';

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
  private nodes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async init(): Promise<void> {}

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    const now = this.now();
    const c = chooseWorker([...this.rows(req.space).values()], now, req);
    if ('refused' in c) return c;
    const row = this.take(req.space, c.workerId, req.owner, now + req.ttlMs);
    return { workerId: row.workerId, generation: row.generation, lastTick: row.lastTick, expiresAtMs: row.expiresAtMs };
  }

  async renew(space: string, workerId: number, owner: string, generation: number, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const r = this.rows(space).get(workerId);
    if (!r || r.owner !== owner || r.generation !== generation) return undefined;
    r.expiresAtMs = this.now() + ttlMs;
    r.lastTick = Math.max(r.lastTick, lastTick);
    return { workerId, generation, lastTick: r.lastTick, expiresAtMs: r.expiresAtMs };
  }

  async release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void> {
    const r = this.rows(space).get(workerId);
    if (!r || r.owner !== owner || r.generation !== generation) return;
    r.expiresAtMs = 0;
    r.lastTick = lastTick;
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    const now = this.now();
    for (;;) {
      const id = ++this.nodes;
      if (id >= workerCount) return { workerId: id, lastTick: -1 };
      const prev = this.rows(space).get(id);
      if (prev && prev.expiresAtMs > now) continue;
      return { workerId: id, lastTick: this.take(space, id, nodeOwner(host), CLAIMED_FOR_GOOD_MS).lastTick };
    }
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

  private rows(space: string): Map<number, Row> {
    let m = this.spaces.get(space);
    if (!m) this.spaces.set(space, (m = new Map()));
    return m;
  }
}
