/**
 * The worker-id lease ledger (issue 21): every grant, renewal horizon,
 * takeover and release of a snowflake worker id, written by the lease store in
 * the same transaction as the lease change, so an ID found in a business table
 * can be traced to the holder of its worker id at its tick.
 *
 * Ticks are the layout's ticks (the space key fixes epoch and unit). A holding
 * (one generation of one worker id) covers [fromTick, untilTick]: from the
 * holder's clock at its grant, and never at or before the previous holder's
 * last tick, up to the highest horizon it reserved (the tick it reported at
 * release, when it released). Every row of a holding carries the holding's
 * `fromTick`, so pruning old rows never shortens a live holding.
 */
export type LeaseEventKind = 'grant' | 'renew' | 'takeover' | 'release';

/** Who held a worker id: the server process behind a lease owner. */
export interface LeaseHolder {
  readonly host: string;
  readonly pid: number;
  /** Fixed at the process's start (the lease owner's last part). */
  readonly instance: string;
  /** Sequoia's version; '' when the holder did not say. */
  readonly version: string;
}

export interface LeaseLedgerEntry {
  readonly space: string;
  readonly workerId: number;
  readonly generation: number;
  readonly kind: LeaseEventKind;
  readonly owner: string;
  readonly holder: LeaseHolder;
  readonly fromTick: number;
  readonly untilTick: number;
  /** Store-clock ms when the row was written. */
  readonly atMs: number;
}

/** One holding: a worker id's generation, from its grant to its last horizon or release. */
export interface LeaseHolding {
  readonly workerId: number;
  readonly generation: number;
  /** How the holding began (grant: a free or released id; takeover: a lease that ran out unreleased). Undefined once its first row is pruned. */
  readonly began: 'grant' | 'takeover' | undefined;
  readonly owner: string;
  readonly holder: LeaseHolder;
  readonly fromTick: number;
  readonly untilTick: number;
  readonly released: boolean;
  /** Store-clock ms of its first and last row still kept. */
  readonly firstAtMs: number;
  readonly lastAtMs: number;
}

export interface LeaseLedger {
  /**
   * Every holding of the space (of one worker id, when given) still in the
   * ledger, by worker id then generation (one per holding: few rows). Who held
   * an id at a tick: `spansAt` (core/snowflake/holding-index.ts) of its holdings.
   */
  holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]>;
  /** The rows of one worker id, oldest first. */
  entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]>;
  /**
   * Deletes at most `limit` rows older than `retentionMs` (store clock),
   * oldest first; a worker-node claim (held for good) is kept. Returns how
   * many went: call again while it returns `limit`.
   */
  pruneLedger(retentionMs: number, limit: number): Promise<number>;
}
