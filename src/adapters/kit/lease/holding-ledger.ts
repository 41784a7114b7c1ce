/**
 * A lease ledger kept as one record per holding (ports/lease-ledger.ts), as
 * the zookeeper providers (one node per holding) and the etcd provider (one
 * key per holding) keep it: what the record holds, how it is read back, and
 * the ledger rows it stands for. A record is rewritten with each report, not
 * appended to, so a coordination service holds a few bytes per holding.
 */
import type { LeaseHolder, LeaseHolding, LeaseLedgerEntry } from '../../../ports/lease-ledger.js';

/** What a holding's record holds (JSON). */
export interface HoldingData {
  readonly workerId: number;
  readonly began: 'grant' | 'takeover';
  readonly owner: string;
  readonly holder: LeaseHolder;
  readonly fromTick: number;
  untilTick: number;
  released: boolean;
  readonly firstAtMs: number;
  lastAtMs: number;
}

/** The holding of a record; undefined when it is not one (of this worker id). */
export function parseHolding(workerId: number, generation: number, b: Buffer | undefined): LeaseHolding | undefined {
  try {
    const d = JSON.parse(b?.toString('utf8') ?? '') as HoldingData;
    if (d.workerId !== workerId || !Number.isSafeInteger(d.fromTick) || !Number.isSafeInteger(d.untilTick)) return undefined;
    return {
      workerId,
      generation,
      began: d.began,
      owner: d.owner,
      holder: d.holder,
      fromTick: d.fromTick,
      untilTick: d.untilTick,
      released: d.released === true,
      firstAtMs: d.firstAtMs,
      lastAtMs: d.lastAtMs,
    };
  } catch {
    return undefined;
  }
}

/** A record keeps the holding, not each report: its start, and its latest horizon or release. */
export function holdingEntries(space: string, holdings: readonly LeaseHolding[]): LeaseLedgerEntry[] {
  const out: LeaseLedgerEntry[] = [];
  for (const h of holdings) {
    const base = { space, workerId: h.workerId, generation: h.generation, owner: h.owner, holder: h.holder, fromTick: h.fromTick };
    out.push({ ...base, kind: h.began ?? 'grant', untilTick: h.fromTick - 1, atMs: h.firstAtMs });
    if (h.released || h.untilTick >= h.fromTick)
      out.push({ ...base, kind: h.released ? 'release' : 'renew', untilTick: h.untilTick, atMs: h.lastAtMs });
  }
  return out;
}
