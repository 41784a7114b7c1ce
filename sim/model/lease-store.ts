/**
 * The worker-lease store as the simulated snowflake servers reach it: ONE
 * MemoryWorkerLeaseStore (the production class, the truth; its expiry on the
 * store's own clock, true simulated time) behind a network of simulated
 * latency, with faults: unavailable, an answer lost after the store applied
 * it (the driver's timeout fails the call), an answer delayed past the
 * lease's length. Each process talks to it through its own `LeaseLink`, whose
 * answers are events of that process (dropped if it crashed, held while it
 * is paused). The model is told every grant, renewal and release the store
 * applied, for the checks (snowflake-world.ts).
 */
import { UnavailableError } from '../../src/core/errors.js';
import { MemoryWorkerLeaseStore } from '../../src/adapters/memory/memory-worker-lease-store.js';
import type { LeaseHolding, LeaseLedgerEntry } from '../../src/ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, NodeClaim, WorkerLeaseStore } from '../../src/ports/worker-lease-store.js';
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';
import { NetworkLink, type NetworkFaults } from './network.js';

/** The store's clock: true simulated time from 2026-01-01 (the hosts' wall clocks start there too). */
const STORE_ORIGIN = 1_767_225_600_000;

/** What the store applied, as the checks need it. */
export interface LeaseEvents {
  granted(owner: string, space: string, workerId: number, generation: number, afterTick: number): void;
  /** `held`: the lease was still the holder's when the release arrived (a clean release). */
  released(lease: HeldLease, held: boolean): void;
}

export class LeaseStoreModel {
  readonly faults: NetworkFaults = { unavailable: false, loseAnswers: 0, delayAnswers: 0 };
  readonly db: MemoryWorkerLeaseStore;
  events: LeaseEvents = { granted: () => {}, released: () => {} };

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {
    // The store's clock is true time: the servers' clocks step, the database's does not.
    this.db = new MemoryWorkerLeaseStore(() => STORE_ORIGIN + Math.floor(sched.now));
  }

  /** The live (unexpired) holder of a worker id, by the store's clock. */
  holder(space: string, workerId: number): string | undefined {
    const r = this.db.peek(space, workerId);
    return r && r.expiresAtMs > STORE_ORIGIN + Math.floor(this.sched.now) ? r.owner : undefined;
  }

  linkFor(proc: Proc): LeaseLink {
    return new LeaseLink(this, proc, this.sched, this.rng);
  }
}

const unavailable = (what: string) => new UnavailableError('STORE_UNAVAILABLE', `sim lease store: ${what}`, { retryAfterMs: 1000 });

/** One process's connection to the lease store: every call crosses the simulated network both ways. */
export class LeaseLink extends NetworkLink implements WorkerLeaseStore {
  readonly kind = 'sim';
  constructor(
    private readonly model: LeaseStoreModel,
    proc: Proc,
    sched: Scheduler,
    rng: Prng,
  ) {
    super(proc, sched, rng, model.faults, unavailable);
  }

  async init(): Promise<void> {}

  acquire(req: AcquireRequest): Promise<LeaseRecord | { readonly refused: string }> {
    return this.call(async () => {
      const r = await this.model.db.acquire(req);
      if (!('refused' in r)) {
        this.model.events.granted(req.owner, req.space, r.workerId, r.generation, r.lastTick);
        this.sched.log(`lease ${req.owner} ${req.space.slice(-12)} w${r.workerId} g${r.generation} after ${r.lastTick}`);
      }
      return r;
    });
  }

  renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    return this.call(async () => {
      const r = await this.model.db.renew(lease, ttlMs, lastTick);
      if (!r) this.sched.log(`renew-refused ${lease.owner} w${lease.workerId} g${lease.generation}`);
      return r;
    });
  }

  release(lease: HeldLease, lastTick: number): Promise<void> {
    return this.call(async () => {
      const row = this.model.db.peek(lease.space, lease.workerId);
      const held = row !== undefined && row.owner === lease.owner && row.generation === lease.generation;
      await this.model.db.release(lease, lastTick);
      this.model.events.released(lease, held);
      this.sched.log(`release ${lease.owner} w${lease.workerId} g${lease.generation} at ${lastTick}${held ? '' : ' (not held)'}`);
    });
  }

  registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    return this.call(() => this.model.db.registerNode(space, host, workerCount));
  }
  holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    return this.call(() => this.model.db.holdings(space, workerId));
  }
  entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return this.call(() => this.model.db.entries(space, workerId));
  }
  pruneLedger(retentionMs: number, limit: number): Promise<number> {
    return this.call(() => this.model.db.pruneLedger(retentionMs, limit));
  }
  async close(): Promise<void> {}
}
