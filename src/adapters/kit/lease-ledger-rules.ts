/**
 * What every lease store writes to its lease ledger (ports/lease-ledger.ts),
 * decided here once: the kind of a take, the holder behind an owner, the
 * first tick of a holding, and a holding from its grouped rows.
 */
import type { LeaseEventKind, LeaseHolder, LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import { CLAIMED_FOR_GOOD_MS } from './choose-worker.js';

/** The until tick of a worker-node claim: held for good. Pruning keeps these rows. */
export const HELD_FOR_GOOD_TICK = CLAIMED_FOR_GOOD_MS;

/** Rows pruned per statement: small, so a prune never holds the table long. */
export const PRUNE_BATCH = 500;

/**
 * A take of an id is a takeover when the previous holder's lease ran out
 * without a release (it crashed or lost the store); else a grant.
 */
export function takeKind(prev: { readonly expiresAtMs: number } | undefined): 'grant' | 'takeover' {
  return prev === undefined || prev.expiresAtMs === 0 ? 'grant' : 'takeover';
}

/** The holder a request names, else what the owner text says (`host/pid/instance`, the provider's default). */
export function holderOf(owner: string, holder: LeaseHolder | undefined): LeaseHolder {
  if (holder) return holder;
  const parts = owner.replace(/^worker-node:/, '').split('/');
  if (parts.length >= 3) {
    const instance = parts.pop() as string;
    const pid = Number(parts.pop());
    return { host: parts.join('/'), pid: Number.isSafeInteger(pid) ? pid : 0, instance, version: '' };
  }
  return { host: owner, pid: 0, instance: '', version: '' };
}

/**
 * A new holding's first tick: the holder's clock, but never at or before the
 * previous holder's last tick (the generator starts strictly after it).
 * Without the holder's clock, only that bound is known.
 */
export function firstTick(nowTick: number | undefined, prevLastTick: number): number {
  return Math.max(nowTick ?? 0, prevLastTick + 1, 0);
}

/** One row per holding as the stores group them (numbers may arrive as text). */
export interface HoldingRow {
  readonly worker_id: number | string;
  readonly generation: number | string;
  readonly began: string | null;
  readonly owner: string;
  readonly host: string;
  readonly pid: number | string;
  readonly instance: string;
  readonly version: string;
  readonly from_tick: number | string;
  readonly until_tick: number | string;
  readonly released_until: number | string | null;
  readonly first_at: number | string;
  readonly last_at: number | string;
}

/**
 * The SELECT list and GROUP BY that turn ledger rows into holdings (portable
 * across SQLite, PostgreSQL and MySQL): a released holding ends at its
 * release's tick, a live or crashed one at its highest horizon.
 */
export const HOLDING_COLUMNS = `worker_id, generation,
  MIN(CASE WHEN kind IN ('grant', 'takeover') THEN kind END) AS began,
  MIN(owner) AS owner, MIN(host) AS host, MIN(pid) AS pid, MIN(instance) AS instance, MIN(version) AS version,
  MIN(from_tick) AS from_tick, MAX(until_tick) AS until_tick,
  MAX(CASE WHEN kind = 'release' THEN until_tick END) AS released_until,
  MIN(at_ms) AS first_at, MAX(at_ms) AS last_at`;
export const HOLDING_GROUP = 'GROUP BY worker_id, generation ORDER BY worker_id, generation';

export function toHolding(r: HoldingRow): LeaseHolding {
  const released = r.released_until !== null && r.released_until !== undefined;
  return {
    workerId: Number(r.worker_id),
    generation: Number(r.generation),
    began: r.began === 'grant' || r.began === 'takeover' ? r.began : undefined,
    owner: r.owner,
    holder: { host: r.host, pid: Number(r.pid), instance: r.instance, version: r.version },
    fromTick: Number(r.from_tick),
    untilTick: Number(released ? r.released_until : r.until_tick),
    released,
    firstAtMs: Number(r.first_at),
    lastAtMs: Number(r.last_at),
  };
}

export const covers = (h: LeaseHolding, tick: number): boolean => h.fromTick <= tick && tick <= h.untilTick;

export interface EntryRow {
  readonly worker_id: number | string;
  readonly generation: number | string;
  readonly kind: string;
  readonly owner: string;
  readonly host: string;
  readonly pid: number | string;
  readonly instance: string;
  readonly version: string;
  readonly from_tick: number | string;
  readonly until_tick: number | string;
  readonly at_ms: number | string;
}

export const ENTRY_COLUMNS = 'worker_id, generation, kind, owner, host, pid, instance, version, from_tick, until_tick, at_ms';

export function toEntry(space: string, r: EntryRow): LeaseLedgerEntry {
  return {
    space,
    workerId: Number(r.worker_id),
    generation: Number(r.generation),
    kind: r.kind as LeaseEventKind,
    owner: r.owner,
    holder: { host: r.host, pid: Number(r.pid), instance: r.instance, version: r.version },
    fromTick: Number(r.from_tick),
    untilTick: Number(r.until_tick),
    atMs: Number(r.at_ms),
  };
}

/** Holdings from ledger rows in order (the memory store; the SQL stores group in SQL with HOLDING_COLUMNS). */
export function holdingsFromEntries(entries: readonly LeaseLedgerEntry[]): LeaseHolding[] {
  const byKey = new Map<string, LeaseLedgerEntry[]>();
  for (const e of entries) {
    const k = `${e.workerId}/${e.generation}`;
    const list = byKey.get(k);
    if (list) list.push(e);
    else byKey.set(k, [e]);
  }
  return [...byKey.values()]
    .map((list): LeaseHolding => {
      const first = list[0] as LeaseLedgerEntry;
      const release = list.find((e) => e.kind === 'release');
      const began = list.find((e) => e.kind === 'grant' || e.kind === 'takeover')?.kind;
      return {
        workerId: first.workerId,
        generation: first.generation,
        began: began === 'grant' || began === 'takeover' ? began : undefined,
        owner: first.owner,
        holder: first.holder,
        fromTick: Math.min(...list.map((e) => e.fromTick)),
        untilTick: release ? release.untilTick : Math.max(...list.map((e) => e.untilTick)),
        released: release !== undefined,
        firstAtMs: Math.min(...list.map((e) => e.atMs)),
        lastAtMs: Math.max(...list.map((e) => e.atMs)),
      };
    })
    .sort((a, b) => a.workerId - b.workerId || a.generation - b.generation);
}
