/**
 * How a range-ledger entry is shown: one line of text for an operator (audit,
 * explain) and one JSON shape (the ranges route, `--json`), IDs as decimal
 * strings.
 */
import type { LedgerEntry } from '../ports/range-ledger.js';

export function describeLedgerEntry(e: LedgerEntry): string {
  const range = e.stride > 1 ? `[${e.first}, ${e.last}] every ${e.stride}` : `[${e.first}, ${e.last}]`;
  const what = e.kind === 'give-back' ? 'given back' : 'issued';
  return `${what} ${range} (${e.step} IDs) by ${e.host} pid ${e.pid} instance ${e.instance} v${e.version} at ${new Date(e.atMs).toISOString()}, fence epoch ${e.fenceEpoch}, generation ${e.generation}`;
}

export function ledgerEntryJson(e: LedgerEntry) {
  return {
    tag: e.tag,
    kind: e.kind,
    first: e.first.toString(),
    last: e.last.toString(),
    stride: e.stride,
    step: e.step,
    server: { host: e.host, pid: e.pid, instance: e.instance, version: e.version },
    time: new Date(e.atMs).toISOString(),
    fenceEpoch: e.fenceEpoch,
    generation: e.generation,
  };
}
