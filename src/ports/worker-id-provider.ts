/**
 * Where a Snowflake generator's worker id comes from.
 *
 * A worker id is held per id space (a layout's epoch, unit and widths: see
 * `Layout.spaceKey`), since IDs of different layouts are different numbers.
 * A grant says which id, after which tick the holder may start (the previous
 * holder's last reported tick: start strictly after it), and until when the
 * holder may issue (a monotonic deadline that ends before the lease could have
 * expired in the store). Providers without leases answer an infinite deadline.
 */
export interface IdSpace {
  /** `Layout.spaceKey`. */
  readonly key: string;
  /** Worker ids are [0, workerCount). */
  readonly workerCount: number;
  /** Milliseconds per tick, to turn a lease's times into ticks. */
  readonly unitMs: number;
  /** The layout's epoch (tick 0), wall-clock ms: lets a provider compare a reported tick with the clock. */
  readonly epochMs?: number | undefined;
  /** A readable name for logs (the layout name). */
  readonly label: string;
}

export interface WorkerGrant {
  readonly workerId: number;
  /** Fencing token: grows each time the id changes hands. */
  readonly generation: number;
  /** Issue strictly after this tick; -1 when the id was never used. */
  readonly afterTick: number;
  /** Monotonic ms (performance.now()) until which IDs may be issued; Infinity when unleased. */
  readonly validUntil: number;
  /** Wall-clock ms at which the lease expires in the store (metrics); undefined when unleased. */
  readonly expiresAtMs?: number | undefined;
  /**
   * The lease's length, ms: `expiresAtMs` is this long after the renewal that
   * set it (metrics: a healthy holder's time left stays near it, so an alert
   * can tell a missed renewal from the usual countdown). Undefined when unleased.
   */
  readonly leaseMs?: number | undefined;
}

export interface WorkerIdProvider {
  /** e.g. 'static', 'sql-lease(sqlite)', 'k8s-ordinal', 'worker-node', 'zookeeper'. */
  readonly kind: string;
  /** True when grants expire and `renew` must run before `validUntil`. */
  readonly leased: boolean;
  /** Lease length, ms (the service renews at a third of it). Undefined when unleased. */
  readonly ttlMs: number | undefined;
  /**
   * Takes a worker id in the space. `exclude` lists ids this process already
   * holds in the space (backup workers). Throws LEASE_LOST when none can be had.
   */
  acquire(space: IdSpace, exclude?: readonly number[]): Promise<WorkerGrant>;
  /**
   * Extends the lease and records `ceilingTick`, the highest tick the holder
   * may issue until the next renewal (the next holder starts after it).
   * Throws LEASE_LOST when the id changed hands.
   */
  renew(space: IdSpace, grant: WorkerGrant, ceilingTick: number): Promise<WorkerGrant>;
  /**
   * The highest tick this server has recorded in the space, on any worker id
   * (its state dir), or undefined when it keeps none: a lineage's start check.
   */
  highestTick?(space: IdSpace): Promise<number | undefined>;
  /** Gives the id back, recording the last tick actually issued. */
  release(space: IdSpace, grant: WorkerGrant, lastTick: number): Promise<void>;
  close(): Promise<void>;
}
