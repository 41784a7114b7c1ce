/**
 * What every lease store writes to its lease ledger (ports/lease-ledger.ts),
 * decided here once: the row of each lease change (the kind of a take, the
 * holder behind an owner, the first tick of a holding), the SQL the three SQL
 * stores share, and a holding from its grouped rows.
 */
import type { LeaseEventKind, LeaseHolder, LeaseHolding, LeaseLedgerEntry } from '../../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, LeaseRow, NodeClaim } from '../../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from './choose-worker.js';

/** The until tick of a worker-node claim: held for good. Pruning keeps these rows. */
export const HELD_FOR_GOOD_TICK = CLAIMED_FOR_GOOD_MS;

/** Rows pruned per statement: small, so a prune never holds the table long. */
export const PRUNE_BATCH = 500;

/**
 * A take of an id is a takeover when the previous holder's lease ran out
 * without a release (it crashed or lost the store); else a grant.
 */
function takeKind(prev: { readonly expiresAtMs: number } | undefined): 'grant' | 'takeover' {
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
function firstTick(nowTick: number | undefined, prevLastTick: number): number {
  return Math.max(nowTick ?? 0, prevLastTick + 1, 0);
}

/** A ledger row before the store stamps it with its clock (`at_ms`). */
export type LedgerRow = Omit<LeaseLedgerEntry, 'atMs'>;

/** What a take leaves in the lease row: the new generation, and the last tick it kept from the previous holder. */
export interface Taken {
  readonly generation: number;
  readonly lastTick: number;
}

/** The lease an acquire answers; `expiresAtMs` in the store's clock. */
export function granted(workerId: number, taken: Taken, expiresAtMs: number): LeaseRecord {
  return { workerId, generation: taken.generation, lastTick: taken.lastTick, expiresAtMs };
}

/**
 * The row of an acquire (`rows`: the space's lease rows before the take): the
 * holding starts at the holder's clock and has reserved no tick yet.
 */
export function grantRow(req: AcquireRequest, workerId: number, taken: Taken, rows: readonly LeaseRow[]): LedgerRow {
  const from = firstTick(req.nowTick, taken.lastTick);
  const kind = takeKind(rows.find((r) => r.workerId === workerId));
  return row(req.space, workerId, taken, kind, req.owner, holderOf(req.owner, req.holder), from, from - 1);
}

/** The two writes of a take, bound to one transaction of a store that awaits its statements (PostgreSQL, MySQL). */
export interface TakeStatements {
  /** Gives the id to `owner` (a new generation), keeping the last tick. */
  take(workerId: number, owner: string, expiresAtMs: number): Promise<Taken>;
  record(row: LedgerRow): Promise<void>;
}

/**
 * The rest of an acquire once a store that awaits its statements has read
 * its clock and the space's rows, inside its transaction: choose an id, take
 * it, record the grant. SQLite and memory do the same steps synchronously (a
 * better-sqlite3 transaction cannot wait).
 */
export async function grantFrom(
  rows: readonly LeaseRow[],
  nowMs: number,
  req: AcquireRequest,
  st: TakeStatements,
): Promise<LeaseRecord | { readonly refused: string }> {
  const choice = chooseWorker(rows, nowMs, req);
  if ('refused' in choice) return choice;
  const taken = await st.take(choice.workerId, req.owner, nowMs + req.ttlMs);
  await st.record(grantRow(req, choice.workerId, taken, rows));
  return granted(choice.workerId, taken, nowMs + req.ttlMs);
}

/** What registerNode asks a store that awaits its statements, inside the space's transaction. */
interface NodeStatements extends TakeStatements {
  /** A new node row; its id. */
  insertNode(): Promise<number>;
  /** The lease row of `workerId`, and whether it is live in the store's clock. */
  leaseOf(workerId: number): Promise<{ readonly expiresAtMs: number; readonly live: boolean } | undefined>;
}

/** registerNode (ports/worker-lease-store.ts) on a store that awaits its statements. */
export async function registerNodeWith(space: string, host: string, workerCount: number, st: NodeStatements): Promise<NodeClaim> {
  for (;;) {
    const id = await st.insertNode();
    if (id >= workerCount) return { workerId: id, lastTick: -1 };
    const prev = await st.leaseOf(id);
    if (prev?.live) continue;
    const owner = nodeOwner(host);
    const taken = await st.take(id, owner, CLAIMED_FOR_GOOD_MS);
    await st.record(claimRow(space, id, owner, taken, prev));
    return { workerId: id, lastTick: taken.lastTick };
  }
}

/** The row of a worker-node claim: held for good, so pruning keeps it. */
export function claimRow(
  space: string,
  workerId: number,
  owner: string,
  taken: Taken,
  prev: { readonly expiresAtMs: number } | undefined,
): LedgerRow {
  return row(
    space,
    workerId,
    taken,
    takeKind(prev),
    owner,
    holderOf(owner, undefined),
    firstTick(undefined, taken.lastTick),
    HELD_FOR_GOOD_TICK,
  );
}

/**
 * The row of a renewal or release: the holding's first tick and holder come
 * from its latest row (a holding from before the ledger existed has only the horizon).
 */
export function followingRow(
  lease: HeldLease,
  kind: 'renew' | 'release',
  untilTick: number,
  latest: LeaseLedgerEntry | undefined,
): LedgerRow {
  const holder = latest?.holder ?? holderOf(lease.owner, undefined);
  return row(lease.space, lease.workerId, lease, kind, lease.owner, holder, latest?.fromTick ?? untilTick, untilTick);
}

function row(
  space: string,
  workerId: number,
  { generation }: { readonly generation: number },
  kind: LeaseEventKind,
  owner: string,
  holder: LeaseHolder,
  fromTick: number,
  untilTick: number,
): LedgerRow {
  return { space, workerId, generation, kind, owner, holder, fromTick, untilTick };
}

/** The INSERT of a ledger row; `nowMs` is the store's clock (an SQL expression, or `?` bound last). Values: ledgerValues. */
export const ledgerInsert = (nowMs: string): string =>
  `INSERT INTO sequoia_lease_ledger (space, worker_id, generation, kind, owner, host, pid, instance, version, from_tick, until_tick, at_ms)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${nowMs})`;

export function ledgerValues(r: LedgerRow): (string | number)[] {
  const h = r.holder;
  return [r.space, r.workerId, r.generation, r.kind, r.owner, h.host, h.pid, h.instance, h.version, r.fromTick, r.untilTick];
}

/** The columns every ledger row and holding carries (numbers may arrive as text). */
interface LedgerColumns {
  readonly worker_id: number | string;
  readonly generation: number | string;
  readonly owner: string;
  readonly host: string;
  readonly pid: number | string;
  readonly instance: string;
  readonly version: string;
  readonly from_tick: number | string;
  readonly until_tick: number | string;
}

const holderColumns = (r: LedgerColumns): LeaseHolder => ({ host: r.host, pid: Number(r.pid), instance: r.instance, version: r.version });

/** One row per holding as the stores group them. */
export interface HoldingRow extends LedgerColumns {
  readonly began: string | null;
  readonly released_until: number | string | null;
  readonly first_at: number | string;
  readonly last_at: number | string;
}

/**
 * The holdings of a space (of one worker id, when given), with its parameters:
 * the GROUP BY turns ledger rows into holdings (portable across SQLite,
 * PostgreSQL and MySQL); a released holding ends at its release's tick, a live
 * or crashed one at its highest horizon.
 */
export function holdingsQuery(space: string, workerId: number | undefined): { readonly sql: string; readonly values: (string | number)[] } {
  return {
    sql: `SELECT worker_id, generation,
  MIN(CASE WHEN kind IN ('grant', 'takeover') THEN kind END) AS began,
  MIN(owner) AS owner, MIN(host) AS host, MIN(pid) AS pid, MIN(instance) AS instance, MIN(version) AS version,
  MIN(from_tick) AS from_tick, MAX(until_tick) AS until_tick,
  MAX(CASE WHEN kind = 'release' THEN until_tick END) AS released_until,
  MIN(at_ms) AS first_at, MAX(at_ms) AS last_at
  FROM sequoia_lease_ledger WHERE space = ?${workerId === undefined ? '' : ' AND worker_id = ?'}
  GROUP BY worker_id, generation ORDER BY worker_id, generation`,
    values: workerId === undefined ? [space] : [space, workerId],
  };
}

export function toHolding(r: HoldingRow): LeaseHolding {
  const released = r.released_until !== null && r.released_until !== undefined;
  return {
    workerId: Number(r.worker_id),
    generation: Number(r.generation),
    began: r.began === 'grant' || r.began === 'takeover' ? r.began : undefined,
    owner: r.owner,
    holder: holderColumns(r),
    fromTick: Number(r.from_tick),
    untilTick: Number(released ? r.released_until : r.until_tick),
    released,
    firstAtMs: Number(r.first_at),
    lastAtMs: Number(r.last_at),
  };
}

export interface EntryRow extends LedgerColumns {
  readonly kind: string;
  readonly at_ms: number | string;
}

const ENTRY_SELECT =
  'SELECT worker_id, generation, kind, owner, host, pid, instance, version, from_tick, until_tick, at_ms FROM sequoia_lease_ledger';
/** The rows of one worker id, oldest first; values: space, worker id. */
export const ENTRIES_QUERY = `${ENTRY_SELECT} WHERE space = ? AND worker_id = ? ORDER BY seq`;
/** The latest row of a holding (followingRow); values: latestValues. */
export const LATEST_QUERY = `${ENTRY_SELECT} WHERE space = ? AND worker_id = ? AND generation = ? ORDER BY seq DESC LIMIT 1`;
export const latestValues = (lease: HeldLease): (string | number)[] => [lease.space, lease.workerId, lease.generation];

export function toEntry(space: string, r: EntryRow): LeaseLedgerEntry {
  return {
    space,
    workerId: Number(r.worker_id),
    generation: Number(r.generation),
    kind: r.kind as LeaseEventKind,
    owner: r.owner,
    holder: holderColumns(r),
    fromTick: Number(r.from_tick),
    untilTick: Number(r.until_tick),
    atMs: Number(r.at_ms),
  };
}

/** Holdings from ledger rows in order (the memory store; the SQL stores group in SQL: holdingsQuery). */
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
