/** WorkerLeaseStore in memory (one process; tests and `memory:` stores). */
import type { AcquireRequest, LeaseRecord, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { chooseWorker } from '../kit/choose-worker.js';

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
    const rows = this.rows(req.space);
    const now = this.now();
    const c = chooseWorker([...rows.values()], now, req);
    if ('refused' in c) return c;
    const prev = rows.get(c.workerId);
    const row: Row = {
      workerId: c.workerId,
      owner: req.owner,
      generation: (prev?.generation ?? 0) + 1,
      expiresAtMs: now + req.ttlMs,
      lastTick: prev?.lastTick ?? -1,
    };
    rows.set(c.workerId, row);
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

  async registerNode(): Promise<number> {
    return ++this.nodes;
  }

  async close(): Promise<void> {}

  /** Test-only: the raw row. */
  peek(space: string, workerId: number): Readonly<Row> | undefined {
    return this.rows(space).get(workerId);
  }

  private rows(space: string): Map<number, Row> {
    let m = this.spaces.get(space);
    if (!m) this.spaces.set(space, (m = new Map()));
    return m;
  }
}
