/**
 * Lease rows for the `sql-lease` worker-id provider: one row per (space,
 * worker id) with owner, generation (the fencing token), expiry (in the
 * store's own clock) and last tick (the highest tick the holder may have
 * issued). Each operation is one transaction; `acquire` is serialised per
 * space, so two processes never take the same id at once.
 */
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

export interface AcquireRequest {
  readonly space: string;
  readonly owner: string;
  readonly ttlMs: number;
  /** Ids are [0, workerCount). */
  readonly workerCount: number;
  /** Exactly this id (static, k8s-ordinal), else any free one. */
  readonly want?: number | undefined;
  readonly exclude?: readonly number[] | undefined;
}

export interface WorkerLeaseStore {
  readonly kind: string;
  init(): Promise<void>;
  /** Takes a free or expired id; `{refused}` when none is (a live owner holds it). */
  acquire(req: AcquireRequest): Promise<LeaseRecord | { readonly refused: string }>;
  /** Extends the lease while owner and generation still match; undefined when the id changed hands. */
  renew(space: string, workerId: number, owner: string, generation: number, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined>;
  /** Expires the lease now and sets last_tick (the holder has stopped). No-op when it changed hands. */
  release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void>;
  /** worker-node: inserts a new row and answers its id (a new id per start). */
  registerNode(space: string, host: string): Promise<number>;
  close(): Promise<void>;
}
