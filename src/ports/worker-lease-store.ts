/**
 * Lease rows for the `sql-lease` worker-id provider: one row per (space,
 * worker id) with owner, generation (the fencing token), expiry (in the
 * store's own clock) and last tick (the highest tick the holder may have
 * issued). `worker-node` claims its ids in the same rows, never expiring.
 * Each operation is one transaction; `acquire` and `registerNode` are
 * serialised per space, so two processes never take the same id at once.
 */
import type { LeaseHolder, LeaseLedger } from './lease-ledger.js';

export interface LeaseRecord {
  readonly workerId: number;
  readonly generation: number;
  /** Previous holder's last tick (-1: never used). */
  readonly lastTick: number;
  /** Store-clock ms. */
  readonly expiresAtMs: number;
}

export interface LeaseRow {
  readonly workerId: number;
  readonly owner: string;
  readonly expiresAtMs: number;
}

/** Outcome of choosing an id: a free one, or the reason there is none. */
export type LeaseChoice = { readonly workerId: number } | { readonly refused: string };

/** A worker-node id claimed in the lease table, and the last tick of the lease it replaced (-1: none). */
export interface NodeClaim {
  readonly workerId: number;
  readonly lastTick: number;
}

export interface AcquireRequest {
  readonly space: string;
  readonly owner: string;
  readonly ttlMs: number;
  /** Ids are [0, workerCount). */
  readonly workerCount: number;
  /** Exactly this id (static, k8s-ordinal), else any free one. */
  readonly want?: number | undefined;
  readonly exclude?: readonly number[] | undefined;
  /** The holder's clock as a tick of the space, for the ledger: its first ID is at or after it. */
  readonly nowTick?: number | undefined;
  /** For the ledger; default: read from `owner` (host/pid/instance). */
  readonly holder?: LeaseHolder | undefined;
}

/** A lease as its holder names it: a renewal or release holds only while owner and generation still match. */
export interface HeldLease {
  readonly space: string;
  readonly workerId: number;
  readonly owner: string;
  readonly generation: number;
}

/** Every change of a lease is also a ledger row, written in the same transaction (lease-ledger.ts). */
export interface WorkerLeaseStore extends LeaseLedger {
  readonly kind: string;
  init(): Promise<void>;
  /** Takes a free or expired id; `{refused}` when none is (a live owner holds it). */
  acquire(req: AcquireRequest): Promise<LeaseRecord | { readonly refused: string }>;
  /** Extends the lease while owner and generation still match; undefined when the id changed hands. */
  renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined>;
  /** Expires the lease now and sets last_tick (the holder has stopped). No-op when it changed hands. */
  release(lease: HeldLease, lastTick: number): Promise<void>;
  /**
   * worker-node: inserts node rows until one's id is not held in the lease
   * table (no live lease, no other node's claim) and claims that id there for
   * good, in one transaction, so `acquire` never answers it. A new id per
   * start, never reused; an id at or past `workerCount` is answered unclaimed
   * (the caller refuses it).
   */
  registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim>;
  close(): Promise<void>;
}
