/**
 * What every segment store does the same way for the range ledger
 * (ports/range-ledger.ts): which IDs an allocation or a give-back covers,
 * who the process is when no identity was given, and the ledger table.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { LedgerEntry, LedgerKind, LedgerPage, LedgerTop, ServerIdentity } from '../../../ports/range-ledger.js';
import { DEFAULT_TABLE, tableName } from './segment-rules.js';

/** This process, for stores built without an identity (tests, embedding). */
export function processIdentity(version = 'unknown'): ServerIdentity {
  return { host: hostname(), pid: process.pid, instance: INSTANCE, version };
}

/** Fixed when the module loads: one per process (and per worker thread that builds its own stores). */
const INSTANCE = randomBytes(6).toString('hex');

/** The inclusive range of an allocation that moved max_id to `maxId` by `step` (a plain store: stride 1). */
export function allocatedRange(maxId: bigint, step: number): { first: bigint; last: bigint } {
  return { first: maxId - BigInt(step), last: maxId - 1n };
}

/** The inclusive range a give-back from `from` up to the expected max_id returns; undefined when it returns nothing. */
export function givenBackRange(from: bigint, expect: { readonly maxId: bigint }): { first: bigint; last: bigint } | undefined {
  return from < expect.maxId ? { first: from, last: expect.maxId - 1n } : undefined;
}

/** The inclusive range a fence from `oldMaxId` up to `to` jumps over; undefined when it raises nothing. */
export function fencedRange(oldMaxId: bigint, to: bigint): { first: bigint; last: bigint } | undefined {
  return to > oldMaxId ? { first: oldMaxId, last: to - 1n } : undefined;
}

/** A range's length as a ledger row's step (a fence can jump further than an INTEGER holds). */
export function rangeLength(r: { first: bigint; last: bigint }): number {
  const n = r.last - r.first + 1n;
  return n > 2147483647n ? 2147483647 : Number(n);
}

export function covers(e: Pick<LedgerEntry, 'first' | 'last' | 'stride'>, id: bigint): boolean {
  return id >= e.first && id <= e.last && (e.stride <= 1 || (id - e.first) % BigInt(e.stride) === 0n);
}

/** A ledger row as the SQL stores read it back (numbers as text, or bigint, where they may pass 2^53). */
export type LedgerRowText = Record<keyof typeof LEDGER_TABLE, string | number | bigint>;

export function entryFromRow(r: LedgerRowText): LedgerEntry {
  return {
    tag: String(r.tag),
    kind: r.kind === 'give-back' || r.kind === 'fence' ? r.kind : 'allocate',
    first: BigInt(r.first_id),
    last: BigInt(r.last_id),
    stride: Number(r.stride),
    step: Number(r.step),
    host: String(r.host),
    pid: Number(r.pid),
    instance: String(r.instance),
    version: String(r.version),
    atMs: Number(r.at_ms),
    fenceEpoch: Number(r.fence_epoch),
    generation: String(r.generation),
  };
}

/** A tag's ledger top from its entries (the stores that cannot ask their database for it). */
export function ledgerTopOf(entries: Iterable<Pick<LedgerEntry, 'kind' | 'last' | 'atMs'>>): LedgerTop | undefined {
  let last: bigint | undefined;
  let oldestAtMs: number | undefined;
  for (const e of entries) {
    if (e.kind !== 'give-back' && (last === undefined || e.last > last)) last = e.last;
    if (oldestAtMs === undefined || e.atMs < oldestAtMs) oldestAtMs = e.atMs;
  }
  return oldestAtMs === undefined ? undefined : { last, oldestAtMs };
}

/** Two parts of one name's ledger as one (pages of a stream, members of a multi-store set). */
export function higherTop(a: LedgerTop | undefined, b: LedgerTop | undefined): LedgerTop | undefined {
  if (!a || !b) return a ?? b;
  const last = a.last === undefined || (b.last !== undefined && b.last > a.last) ? b.last : a.last;
  return { last, oldestAtMs: Math.min(a.oldestAtMs, b.oldestAtMs) };
}

/**
 * The SQL stores' ledger top: one aggregate over the tag's rows (`top`, the
 * highest last_id but give-backs', and `since`, the oldest at_ms, both as
 * text or null), so no row crosses the wire.
 */
export function ledgerTopSql(ledger: string, text: string): string {
  return `SELECT CAST(MAX(CASE WHEN kind <> 'give-back' THEN last_id END) AS ${text}) AS top, CAST(MIN(at_ms) AS ${text}) AS since FROM ${ledger} WHERE tag = $1`;
}

export function ledgerTopFromRow(row: { top: string | bigint | null; since: string | bigint | null } | undefined): LedgerTop | undefined {
  if (!row || row.since === null) return undefined;
  return { last: row.top === null ? undefined : BigInt(row.top), oldestAtMs: Number(row.since) };
}

/** The ledger's columns: their type in PostgreSQL and SQLite (which gives BIGINT integer affinity), and in MySQL where it differs. */
const LEDGER_TABLE = {
  tag: ['TEXT', 'VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'],
  kind: ['TEXT', 'VARCHAR(16)'],
  first_id: ['BIGINT'],
  last_id: ['BIGINT'],
  stride: ['INTEGER', 'INT'],
  step: ['INTEGER', 'INT'],
  host: ['TEXT', 'VARCHAR(255)'],
  pid: ['INTEGER', 'INT'],
  instance: ['TEXT', 'VARCHAR(64)'],
  version: ['TEXT', 'VARCHAR(64)'],
  at_ms: ['BIGINT'],
  fence_epoch: ['INTEGER', 'INT'],
  generation: ['BIGINT'],
} as const;

export const LEDGER_COLUMNS = Object.keys(LEDGER_TABLE).join(', ');

/**
 * The values of a SQL store's `record` statement (recordSql) for `range`,
 * beside the tag row it was taken from: [tag, kind, first, last, step, host,
 * pid, instance, version, fence epoch, generation].
 */
export function recordValues(
  tag: string,
  kind: LedgerKind,
  range: { first: bigint; last: bigint },
  who: ServerIdentity,
  row: { readonly fenceEpoch: number; readonly generation: string },
): unknown[] {
  return [
    tag,
    kind,
    range.first.toString(),
    range.last.toString(),
    rangeLength(range),
    ...identityValues(who),
    row.fenceEpoch,
    row.generation,
  ];
}

/** One ledger row from recordValues: stride 1, at the database's clock (`now`); `bigint` casts a parameter in the dialect. */
export function recordSql(ledger: string, now: string, bigint: (p: string) => string): string {
  const [first, last, generation] = ['$3', '$4', '$11'].map(bigint);
  return `INSERT INTO ${ledger} (${LEDGER_COLUMNS}) VALUES ($1, $2, ${first}, ${last}, 1, $5, $6, $7, $8, $9, ${now}, $10, ${generation})`;
}

/**
 * An allocation's ledger row in SQL, for a dialect's allocate statements
 * (values: $1 the tag, $3 to $6 who): `first`, `last` and `step` are SQL over
 * the tag row that `from` selects with its fence_epoch and generation.
 */
export function allocationRecordSql(ledger: string, now: string, r: { first: string; last: string; step: string; from: string }): string {
  return `INSERT INTO ${ledger} (${LEDGER_COLUMNS})
    SELECT $1, 'allocate', ${r.first}, ${r.last}, 1, ${r.step}, $3, $4, $5, $6, ${now}, fence_epoch, generation FROM ${r.from}`;
}

/** The ledger entry for `range` beside the tag row just read or changed: one row of a plain store (stride 1, its length as step). */
export function ledgerEntryFor(
  tag: string,
  kind: LedgerKind,
  range: { first: bigint; last: bigint },
  who: ServerIdentity,
  atMs: number,
  row: { readonly fenceEpoch: number; readonly generation: string },
): LedgerEntry {
  const { host, pid, instance, version } = who;
  const { fenceEpoch, generation } = row;
  return {
    tag,
    kind,
    first: range.first,
    last: range.last,
    stride: 1,
    step: rangeLength(range),
    host,
    pid,
    instance,
    version,
    atMs,
    fenceEpoch,
    generation,
  };
}

/** Who took a range, in LEDGER_COLUMNS order (host, pid, instance, version): for a row built in SQL. */
export function identityValues(who: ServerIdentity): unknown[] {
  return [who.host, who.pid, who.instance, who.version];
}

/** Where a SQL segment store keeps its tags and its ledger, and who it records as taking ranges. */
export interface LedgerPlace {
  readonly table: string;
  readonly ledger: string;
  readonly who: ServerIdentity;
}

/**
 * A SQL store's place from its options: the table (checked; `sequoia_alloc`
 * by default), the ledger beside it (`sequoia_ledger` beside the default,
 * `<table>_ledger` beside another), and who it is (this process by default).
 */
export function ledgerPlace(options: { readonly table?: string | undefined; readonly identity?: ServerIdentity | undefined }): LedgerPlace {
  const table = tableName(options.table);
  return { table, ledger: table === DEFAULT_TABLE ? 'sequoia_ledger' : `${table}_ledger`, who: options.identity ?? processIdentity() };
}

/** The ledger table and its indexes, in MySQL's words or in those PostgreSQL and SQLite both take. */
export function ledgerDdl(ledger: string, dialect: 'mysql' | 'standard'): string[] {
  const mysql = dialect === 'mysql';
  const type = (types: readonly string[]) => (mysql ? types[types.length - 1] : types[0]);
  const columns = Object.entries(LEDGER_TABLE)
    .map(([name, types]) => `${name} ${type(types)} NOT NULL`)
    .join(',\n  ');
  if (mysql)
    return [
      `CREATE TABLE IF NOT EXISTS ${ledger} (\n  ${columns},\n  KEY tag_first (tag, first_id),\n  KEY at_ms (at_ms)\n) ENGINE=InnoDB`,
    ];
  return [
    `CREATE TABLE IF NOT EXISTS ${ledger} (\n  ${columns}\n)`,
    `CREATE INDEX IF NOT EXISTS ${ledger}_tag_first ON ${ledger} (tag, first_id)`,
    `CREATE INDEX IF NOT EXISTS ${ledger}_at ON ${ledger} (at_ms)`,
  ];
}

const MIN_I64 = -(1n << 63n);

/**
 * A page of a SQL ledger in order of first_id, the cursor being the first_id
 * the next page starts at. The table has no unique key to page on, so the
 * rows that share the page's last first_id are read apart, all of them, and
 * no row is split between two pages or skipped (a prune between pages only
 * removes rows). `from` reads up to `limit` rows from a first_id on, `at` those of one first_id.
 */
export async function ledgerPageByFirst(
  cursor: string | undefined,
  limit: number,
  from: (first: bigint, limit: number) => Promise<LedgerEntry[]>,
  at: (first: bigint) => Promise<LedgerEntry[]>,
): Promise<LedgerPage> {
  const rows = await from(cursor === undefined ? MIN_I64 : BigInt(cursor), limit);
  const last = rows[rows.length - 1]?.first;
  if (rows.length < limit || last === undefined) return { entries: rows };
  return { entries: [...rows.filter((e) => e.first < last), ...(await at(last))], next: (last + 1n).toString() };
}
