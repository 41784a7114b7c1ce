/**
 * Layout lineages: one ID space (`orders`) whose layout changes over time.
 *
 *   version 1: layout A, from the beginning
 *   version 2: layout B, from cutover T2
 *   …
 *
 * Invariant: every ID version n+1 can issue is above every ID version n can
 * issue. Version n issues only ticks whose time is before T(n+1) (its
 * `lastTick`); version n+1 only ticks from the one the clock reads at T(n+1)
 * on (its `firstTick`), so its smallest ID is `firstTick × 2^lowBits`
 * (`firstId`). A change is safe when that is above version n's largest ID,
 * `(lastTick + 1) × 2^lowBits − 1`. Because the versions then hold disjoint,
 * rising ranges of values, a decoder picks the version from the value alone:
 * the last one whose `firstId` is at or below the ID.
 *
 * The rules beyond value-disjointness are the ones sonyflake v2 and yitter
 * document and enforce nowhere: the epoch may only move earlier, the time
 * field's span may not shrink, the node fields may not shrink (a running worker
 * could hold an id the new version has no room for).
 *
 * This module reads layouts as data only (types), so layout.ts may call it.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Layout } from './layout.js';

export interface LineageVersion {
  /** 1 for the first layout of the lineage, then 2, 3… */
  readonly version: number;
  readonly layout: Layout;
  /** Unix ms from which this version issues; undefined for version 1 (from its epoch). */
  readonly fromMs: number | undefined;
  /** The first tick (of this version's layout) it issues: the clock's tick at `fromMs`; 0 for version 1. */
  readonly firstTick: number;
  /** The last tick it issues: the tick before the next version's cutover, or the layout's last. */
  readonly lastTick: number;
  /** Its smallest ID: `firstTick × 2^lowBits`. */
  readonly firstId: bigint;
}

export interface Lineage {
  readonly name: string;
  readonly versions: readonly LineageVersion[];
}

/** One step of a lineage as configured: a validated layout, and its cutover (absent for the first). */
export interface LineageStep {
  readonly layout: Layout;
  readonly fromMs?: number | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();
const SIGNED_MAX = (1n << 63n) - 1n;

/** The tick a layout's clock reads at `ms`. */
function tickAt(l: Layout, ms: number): number {
  return Math.floor((ms - l.epochMs) / l.unitMs);
}

/** The last tick a layout may issue before `cutoverMs` (its tick one ms earlier), capped at its own last. */
function tickBefore(l: Layout, cutoverMs: number): number {
  return Math.min(l.maxTick, tickAt(l, cutoverMs - 1));
}

/** The largest ID a layout can issue at or below `tick`. */
function maxIdThrough(l: Layout, tick: number): bigint {
  return ((BigInt(tick) + 1n) << BigInt(l.lowBits)) - 1n;
}

/** What a version allows, for the plan: its workers, IDs per ms, and when it runs out. */
export interface VersionCapacity {
  readonly layout: string;
  readonly workers: number;
  readonly idsPerMsPerWorker: number;
  readonly endsAt: string;
}

export function capacityOf(l: Layout): VersionCapacity {
  return {
    layout: l.name,
    workers: 2 ** l.workerBits,
    idsPerMsPerWorker: 2 ** l.sequenceBits / l.unitMs,
    endsAt: iso(l.endsAtMs),
  };
}

/** The verdict on a proposed next version: safe or not (with every reason), and what it changes. */
export interface ChangeCheck {
  readonly safe: boolean;
  /** Why the change is unsafe; empty when safe. */
  readonly problems: readonly string[];
  /** Safe, but worth knowing (a gap with no IDs before the cutover, fewer IDs per ms). */
  readonly warnings: readonly string[];
  /** What breaks once IDs pass 2^63 (empty when the new version's IDs stay below). */
  readonly breaks: readonly string[];
  readonly cutover: string;
  /** The current version's largest ID before the cutover (decimal). */
  readonly currentMaxId: string;
  /** The new version's first ID at the cutover (decimal); undefined when it has no tick there. */
  readonly nextFirstId: string | undefined;
  readonly current: VersionCapacity;
  readonly next: VersionCapacity;
}

/** What breaks when a lineage moves to IDs at or above 2^63 (the seed article, §十). */
export const BREAKS_AT_2_63: readonly string[] = [
  'signed 64-bit columns (PostgreSQL and MySQL BIGINT, SQL Server bigint) refuse them or store them negative',
  'signed 64-bit integers in languages (Java and Kotlin long, Go int64, C# long) read them as negative',
  'JSON numbers above 2^53 lose digits in JavaScript and many parsers: send IDs as strings',
  'Protobuf int64, sint64 and sfixed64 fields cannot hold them: use uint64, fixed64 or string',
];

/**
 * Checks a proposed next version against the current one, from `cutoverMs`.
 *
 * @example
 * checkChange(getLayout('twitter'), orders2027, Date.parse('2027-01-01T00:00:00Z')) // { safe: true, … }
 */
export function checkChange(current: Layout, next: Layout, cutoverMs: number): ChangeCheck {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (next.epochMs > current.epochMs) {
    problems.push(
      `the epoch may only move earlier: ${next.name}'s ${iso(next.epochMs)} is after ${current.name}'s ${iso(current.epochMs)}`,
    );
  }
  // The time field's span may not shrink (an earlier epoch alone may end a little sooner: that is the price of moving it).
  if ((next.maxTick + 1) * next.unitMs < (current.maxTick + 1) * current.unitMs) {
    const fewer = next.timeBits < current.timeBits ? `fewer time bits (${current.timeBits} → ${next.timeBits}): ` : '';
    problems.push(
      `${fewer}${next.name}'s time field spans less than ${current.name}'s: it runs out on ${iso(next.endsAtMs)} (${current.name}: ${iso(current.endsAtMs)})`,
    );
  }
  if (next.workerBits < current.workerBits) {
    problems.push(
      `the node fields shrink (${current.workerBits} → ${next.workerBits} bits: ${2 ** current.workerBits} → ${2 ** next.workerBits} worker ids): a running worker may hold an id the new version has no room for`,
    );
  }
  if (next.shardBits > 0 || current.shardBits > 0) problems.push('a lineage cannot change a layout with a per-request shard field');
  const lastTick = tickBefore(current, cutoverMs);
  const currentMax = lastTick < 0 ? -1n : maxIdThrough(current, lastTick);
  const firstTick = tickAt(next, cutoverMs);
  let nextFirst: bigint | undefined;
  if (firstTick < 0) problems.push(`${next.name}'s epoch ${iso(next.epochMs)} is after the cutover ${iso(cutoverMs)}`);
  else if (firstTick > next.maxTick) problems.push(`${next.name} has run out of time bits by the cutover (${iso(next.endsAtMs)})`);
  else {
    nextFirst = BigInt(firstTick) << BigInt(next.lowBits);
    if (nextFirst <= currentMax) {
      problems.push(
        `not value-disjoint: ${next.name}'s first ID at the cutover (${nextFirst}) is not above ${current.name}'s largest ID before it (${currentMax})`,
      );
    }
  }
  if (current.endsAtMs < cutoverMs) {
    warnings.push(`${current.name} runs out on ${iso(current.endsAtMs)}, before the cutover: IDs are refused until ${iso(cutoverMs)}`);
  }
  if (next.sequenceBits - Math.log2(next.unitMs) < current.sequenceBits - Math.log2(current.unitMs)) {
    warnings.push(`fewer IDs per ms per worker (${2 ** current.sequenceBits / current.unitMs} → ${2 ** next.sequenceBits / next.unitMs})`);
  }
  const nextMax = maxIdThrough(next, next.maxTick);
  const wouldPass = next.timeBits + next.lowBits > 63;
  const breaks = wouldPass ? [...BREAKS_AT_2_63] : [];
  if (wouldPass && nextMax <= SIGNED_MAX) {
    warnings.push(
      `${next.name}'s widths sum to 64: its IDs would reach 2^63 on ${iso(next.endsAtMs)}; Sequoia stops there (ID_SPACE_EXHAUSTED) rather than go negative`,
    );
  }
  return {
    safe: problems.length === 0,
    problems,
    warnings,
    breaks,
    cutover: iso(cutoverMs),
    currentMaxId: currentMax.toString(),
    nextFirstId: nextFirst?.toString(),
    current: capacityOf(current),
    next: capacityOf(next),
  };
}

/**
 * A lineage from its steps, each change checked with `checkChange`. Throws
 * one InvalidArgumentError naming every problem (as `layout "orders": …`).
 */
export function defineLineage(name: string, steps: readonly LineageStep[]): Lineage {
  const problems: string[] = [];
  if (steps.length === 0) problems.push('lineage must list at least one version');
  steps.forEach((s, i) => {
    const where = `lineage[${i}] (${s.layout.name})`;
    if (i === 0 && s.fromMs !== undefined) problems.push(`${where}: the first version has no "from": it runs from its epoch`);
    if (i > 0 && s.fromMs === undefined) problems.push(`${where}: "from" is required (the cutover, e.g. "2027-01-01T00:00:00Z")`);
    if (s.layout.shardBits > 0) problems.push(`${where}: a layout with a per-request shard field cannot be in a lineage`);
    const prev = steps[i - 1];
    if (i === 0 || prev === undefined || s.fromMs === undefined) return;
    if (prev.fromMs !== undefined && s.fromMs <= prev.fromMs) {
      problems.push(`${where}: "from" ${iso(s.fromMs)} must be after the previous version's ${iso(prev.fromMs)}`);
      return;
    }
    const c = checkChange(prev.layout, s.layout, s.fromMs);
    for (const p of c.problems) problems.push(`${where} from ${iso(s.fromMs)}: ${p}`);
  });
  if (problems.length) throw new InvalidArgumentError(`layout ${JSON.stringify(name)}: ${problems.join('; ')}`);
  const versions = steps.map((s, i): LineageVersion => {
    const following = steps[i + 1]?.fromMs;
    const firstTick = s.fromMs === undefined ? 0 : tickAt(s.layout, s.fromMs);
    return {
      version: i + 1,
      layout: s.layout,
      fromMs: s.fromMs,
      firstTick,
      lastTick: following === undefined ? s.layout.maxTick : tickBefore(s.layout, following),
      firstId: s.fromMs === undefined ? 0n : BigInt(firstTick) << BigInt(s.layout.lowBits),
    };
  });
  return { name, versions };
}

/** The version in force at `ms` (Unix ms): the last one whose cutover has passed. */
export function versionAt(lineage: Lineage, ms: number): LineageVersion {
  const vs = lineage.versions;
  for (let i = vs.length - 1; i > 0; i--) if ((vs[i]?.fromMs ?? 0) <= ms) return vs[i] as LineageVersion;
  return vs[0] as LineageVersion;
}

/** The version that issued `id`: the last one whose first ID is at or below it (versions hold rising, disjoint ranges). */
export function versionOf(lineage: Lineage, id: bigint): LineageVersion {
  const vs = lineage.versions;
  for (let i = vs.length - 1; i > 0; i--) if ((vs[i]?.firstId ?? 0n) <= id) return vs[i] as LineageVersion;
  return vs[0] as LineageVersion;
}

/**
 * A cutover as configured: an ISO 8601 time with its zone (`2027-01-01T00:00:00Z`)
 * or Unix ms. Throws InvalidArgumentError naming `field`.
 */
export function parseCutover(v: unknown, field: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(v)) {
    const ms = Date.parse(v);
    if (Number.isFinite(ms)) return ms;
  }
  throw new InvalidArgumentError(
    `${field} must be an ISO 8601 time with its zone (e.g. "2027-01-01T00:00:00Z") or Unix ms (got ${JSON.stringify(v)})`,
  );
}
