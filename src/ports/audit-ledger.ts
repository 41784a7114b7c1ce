/**
 * What `sequoia audit` asks the range ledger (ports/range-ledger.ts): which
 * ranges or worker-id leases issued an ID. Audit works without one and says
 * so; with the store's ledger the command names the entries behind each
 * duplicate and finds foreign IDs.
 */
import type { LedgerEntry } from './range-ledger.js';

export interface AuditLedgerEntry {
  /** Free text an operator reads: the range or lease, server, time, fence epoch. */
  readonly description: string;
  /** The ledger row itself (segment IDs). */
  readonly entry?: LedgerEntry;
}

export interface AuditLedger {
  /** Entries whose range covers `id` for `tag` (segment IDs); empty: a foreign ID. */
  rangesContaining(tag: string, id: bigint): Promise<readonly AuditLedgerEntry[]>;
  /** The tag's allocated and fenced ranges (give-backs left out), a page at a time in no promised order: what the foreign-ID sweep covers with. */
  segmentRangePages?(tag: string): AsyncIterable<readonly LedgerEntry[]>;
  /** Whether anyone held `workerId` of the layout's space at `tick` (snowflake IDs): from the lease ledger (ports/lease-ledger.ts), `leaseHeldFrom` in app/audit.ts. */
  leaseHeld?(spaceKey: string, workerId: number, tick: number): Promise<boolean>;
}
