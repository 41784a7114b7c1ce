/**
 * The Metrics port: what a snowflake generator reports, per worker, for the
 * design's snowflake metrics; the server's SequoiaMetrics reads it at scrape
 * time, never on the hot path. Counters must be monotonic for the life of
 * the process.
 */
export interface SnowflakeWorkerReport {
  /** Label `generator`, e.g. the layout name. */
  readonly generator: string;
  readonly workerId: number;
  /** Last tick issued, in the layout's time unit since its epoch. */
  readonly lastTick: number;
  readonly clockBackwardsTotal: number;
  readonly sequenceExhaustedTotal: number;
  /** Wall-clock ms at which the worker-id lease expires; undefined for providers without leases. */
  readonly leaseExpiresAtMs?: number | undefined;
  /** The lease's length, ms (each renewal sets the expiry this far ahead); undefined for providers without leases. */
  readonly leaseTtlMs?: number | undefined;
  /** IDs issued by this worker so far (sequoia_ids_issued_total{generator,tag=""}). */
  readonly issuedTotal?: number | undefined;
  /** Seconds until the layout's time bits run out (sequoia_layout_remaining_seconds). */
  readonly layoutRemainingSeconds?: number | undefined;
}

export interface SnowflakeMetricsSource {
  /** Called at scrape time; must be cheap and must not touch the hot path. */
  report(): readonly SnowflakeWorkerReport[];
}
