/**
 * What `sequoia audit` will ask the range ledger (issue 21 parts 1–2, not
 * built yet): which ranges or worker-id leases issued an ID. Audit works
 * without one and says so; a store that keeps a ledger implements this and
 * the command names the entries behind each duplicate and finds foreign IDs.
 */
export interface AuditLedgerEntry {
  /** Free text an operator reads: the range or lease, server, time, fence epoch. */
  readonly description: string;
}

export interface AuditLedger {
  /** Entries whose range covers `id` for `tag` (segment IDs); empty: a foreign ID. */
  rangesContaining(tag: string, id: bigint): Promise<readonly AuditLedgerEntry[]>;
  /** Whether anyone held `workerId` of the layout's space at `tick` (snowflake IDs): from the lease ledger (ports/lease-ledger.ts), `leaseHeldFrom` in app/audit.ts. */
  leaseHeld?(spaceKey: string, workerId: number, tick: number): Promise<boolean>;
}
