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

/** What `sequoia explain ID --tag T` and `GET /v1/tags/{tag}/ranges?containing=ID` answer. */
export function rangesAnswer(tag: string, id: bigint, entries: readonly LedgerEntry[] | undefined) {
  const issued = entries?.filter((e) => e.kind !== 'give-back') ?? [];
  const message =
    entries === undefined
      ? 'this store keeps no range ledger (a Leaf or Tinyid table): the ID cannot be traced'
      : issued.length === 0
        ? `no range in the ledger covers ${id} of tag ${tag}: Sequoia did not issue it (or its ledger row was pruned)`
        : issued.length > 1
          ? `${issued.length} ranges cover ${id}: ${issued.map(describeLedgerEntry).join('; ')}`
          : describeLedgerEntry(issued[0] as LedgerEntry);
  return {
    tag,
    id: id.toString(),
    ledger: entries !== undefined,
    covered: issued.length > 0,
    message,
    ranges: (entries ?? []).map(ledgerEntryJson),
  };
}
