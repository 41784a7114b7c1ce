/**
 * What `sequoia audit` finds in a sorted stream of distinct IDs with their
 * counts (id-sort.ts): duplicates, IDs at or above the store's max_id for a
 * segment tag (a store restored from an old backup), snowflake IDs outside
 * their layout, from the future, or from a worker id nobody held at their
 * tick (with the lease ledger), and the summary. Bounded memory: counts,
 * per-day buckets and at most `keep` examples per finding.
 */
import { type Layout, decompose, joinWorker } from '../../core/snowflake/layout.js';
import { FALLBACK_FLOOR, decodeFallbackId } from '../../core/fallback/fallback-space.js';
import { byFirst } from '../../core/id.js';
import { halvesToBigInt } from './id-sort.js';

const TWO32 = 4294967296;
const DAY_MS = 86_400_000;
/** A snowflake ID whose time is more than this ahead of the audit's clock is "from the future". */
export const FUTURE_SLACK_MS = 5_000;

export interface Duplicate {
  readonly id: string;
  readonly count: number;
  /** The ledger entries that issued it; null: no ledger to ask. */
  ledger?: readonly string[] | null;
}

export type AuditTarget =
  | { readonly kind: 'segment'; readonly tag: string }
  | {
      readonly kind: 'snowflake';
      readonly layout: Layout;
      readonly nowMs: number;
      /** From the lease ledger: whether anyone held the worker id at the tick; undefined: not checked. */
      readonly held?: ((workerId: number, tick: number) => boolean) | undefined;
    };

export class AuditAnalysis {
  count = 0;
  distinct = 0;
  min: bigint | undefined;
  max: bigint | undefined;
  private maxHi = 0;
  private maxLo = 0;
  duplicateIds = 0;
  duplicateExtra = 0;
  readonly duplicates: Duplicate[] = [];
  outsideLayout = 0;
  readonly outsideLayoutExamples: string[] = [];
  future = 0;
  readonly futureExamples: string[] = [];
  unheld = 0;
  readonly unheldExamples: string[] = [];
  readonly perDay = new Map<number, number>();
  private readonly tickDiv: number;
  private readonly futureTick: number;

  constructor(
    readonly target: AuditTarget,
    private readonly keep = 1000,
  ) {
    if (target.kind === 'snowflake') {
      const l = target.layout;
      this.tickDiv = 2 ** l.lowBits;
      this.futureTick = Math.floor((target.nowMs + FUTURE_SLACK_MS - l.epochMs) / l.unitMs);
    } else {
      this.tickDiv = 1;
      this.futureTick = 0;
    }
  }

  /** One distinct value with its count, in increasing order. */
  readonly add = (hi: number, lo: number, count: number): void => {
    if (this.distinct === 0) this.min = halvesToBigInt(hi, lo);
    this.distinct++;
    this.count += count;
    this.maxHi = hi;
    this.maxLo = lo;
    if (count > 1) {
      this.duplicateIds++;
      this.duplicateExtra += count - 1;
      if (this.duplicates.length < this.keep) this.duplicates.push({ id: halvesToBigInt(hi, lo).toString(), count });
    }
    if (this.target.kind === 'snowflake') this.snowflake(hi, lo, count, this.target.layout, this.target.held);
  };

  private snowflake(
    hi: number,
    lo: number,
    count: number,
    l: Layout,
    held: ((workerId: number, tick: number) => boolean) | undefined,
  ): void {
    // The tick from the halves without a BigInt: exact while the tick is below 2^53.
    const tick = l.lowBits >= 32 ? Math.floor(hi / 2 ** (l.lowBits - 32)) : hi * (TWO32 / this.tickDiv) + Math.floor(lo / this.tickDiv);
    if (tick > l.maxTick) {
      this.outsideLayout += count;
      if (this.outsideLayoutExamples.length < this.keep) this.outsideLayoutExamples.push(halvesToBigInt(hi, lo).toString());
      return;
    }
    if (tick > this.futureTick) {
      this.future += count;
      if (this.futureExamples.length < this.keep) this.futureExamples.push(halvesToBigInt(hi, lo).toString());
    }
    if (held !== undefined) {
      const id = halvesToBigInt(hi, lo);
      const workerId = joinWorker(l, decompose(l, id).values);
      if (!held(workerId, tick)) {
        this.unheld += count;
        if (this.unheldExamples.length < this.keep) this.unheldExamples.push(`${id} (worker id ${workerId}, tick ${tick})`);
      }
    }
    const day = Math.floor((l.epochMs + tick * l.unitMs) / DAY_MS);
    this.perDay.set(day, (this.perDay.get(day) ?? 0) + count);
  }

  /** Call after the last `add`. */
  finish(): void {
    if (this.distinct > 0) this.max = halvesToBigInt(this.maxHi, this.maxLo);
  }

  /** Segment: the share of [min, max] that is not in the input; `below` leaves out the IDs from a fallback space. */
  gapRate(below?: { readonly max: bigint | undefined; readonly excluded: number }): number | null {
    const max = below === undefined ? this.max : below.max;
    if (this.min === undefined || max === undefined) return null;
    const span = max - this.min + 1n;
    return Number(span - BigInt(this.distinct - (below?.excluded ?? 0))) / Number(span);
  }

  perDayCounts(): Array<{ day: string; count: number }> {
    return [...this.perDay.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([d, c]) => ({ day: new Date(d * DAY_MS).toISOString().slice(0, 10), count: c }));
  }
}

/** Counts and examples of the IDs at or above `bound` (the store's max_id): a second, cheap pass is not needed. */
export class AboveBound {
  count = 0;
  highest: bigint | undefined;
  readonly examples: string[] = [];
  private readonly bHi: number;
  private readonly bLo: number;
  constructor(
    readonly bound: bigint,
    private readonly keep = 1000,
  ) {
    this.bHi = Number(bound >> 32n);
    this.bLo = Number(bound & 0xffffffffn);
  }
  readonly add = (hi: number, lo: number, count: number): void => {
    if (hi < this.bHi || (hi === this.bHi && lo < this.bLo)) return;
    this.count += count;
    const v = halvesToBigInt(hi, lo);
    this.highest = v;
    if (this.examples.length < this.keep) this.examples.push(v.toString());
  };
}

/** A range of the ledger as the sweep needs it (inclusive; IDs first, first+stride, …). */
export interface CoveringRange {
  readonly first: bigint;
  readonly last: bigint;
  readonly stride: number;
}

/**
 * The ledger's ranges coalesced, as pages of them arrive in any order: ranges
 * of one stride and residue that touch or overlap become one. A healthy tag's
 * ledger tiles [start, max_id) (a multi-store set: one tiling per member), so
 * what is held stays a handful of ranges however many rows the ledger has;
 * only holes in the ledger (each one worth a look) add to it.
 */
export class RangeCover {
  /** Rows added. */
  rows = 0;
  /** The most ranges held at once. */
  peakHeld = 0;
  /** Per stride and residue, disjoint ranges sorted by first. */
  private readonly classes = new Map<string, CoveringRange[]>();
  private held = 0;

  add(r: CoveringRange): void {
    this.rows++;
    const stride = Math.max(1, r.stride);
    const s = BigInt(stride);
    const key = `${stride}:${((r.first % s) + s) % s}`;
    let list = this.classes.get(key);
    if (list === undefined) this.classes.set(key, (list = []));
    // The last range whose first is at or below r.first (ranges mostly arrive in order: usually the end).
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list[mid] as CoveringRange).first <= r.first) lo = mid + 1;
      else hi = mid;
    }
    let i = lo - 1;
    const before = list[i];
    let cur: CoveringRange;
    if (before !== undefined && r.first <= before.last + s) {
      cur = { first: before.first, last: r.last > before.last ? r.last : before.last, stride };
      list[i] = cur;
    } else {
      cur = { first: r.first, last: r.last, stride };
      list.splice(++i, 0, cur);
      this.held++;
    }
    // Swallow the ranges the grown one now reaches.
    let next = list[i + 1];
    while (next !== undefined && next.first <= cur.last + s) {
      cur = { first: cur.first, last: next.last > cur.last ? next.last : cur.last, stride };
      list[i] = cur;
      list.splice(i + 1, 1);
      this.held--;
      next = list[i + 1];
    }
    if (this.held > this.peakHeld) this.peakHeld = this.held;
  }

  /** Every range held, sorted by first (ForeignIds' input). */
  ranges(): CoveringRange[] {
    return [...this.classes.values()].flat().sort(byFirst);
  }
}

/**
 * Foreign IDs: covered by no range of the ledger. The IDs arrive sorted, the
 * ranges are sorted by `first`, so one sweep keeps only the ranges open at the
 * current ID. IDs below the ledger's first range were issued before the ledger
 * began (or their rows were pruned): counted apart, never called foreign.
 */
export class ForeignIds {
  count = 0;
  beforeLedger = 0;
  readonly examples: string[] = [];
  private next = 0;
  private open: CoveringRange[] = [];
  /** The first ID of the ledger's lowest range; undefined: the ledger holds no range of the tag. */
  readonly lowest: bigint | undefined;
  constructor(
    private readonly ranges: readonly CoveringRange[],
    private readonly keep = 1000,
  ) {
    this.lowest = ranges[0]?.first;
  }
  readonly add = (hi: number, lo: number, count: number): void => {
    const id = halvesToBigInt(hi, lo);
    if (this.lowest === undefined || id < this.lowest) {
      this.beforeLedger += count;
      return;
    }
    while (this.next < this.ranges.length && (this.ranges[this.next] as CoveringRange).first <= id)
      this.open.push(this.ranges[this.next++] as CoveringRange);
    if (this.open.some((r) => r.last < id)) this.open = this.open.filter((r) => r.last >= id);
    if (this.open.some((r) => r.stride <= 1 || (id - r.first) % BigInt(r.stride) === 0n)) return;
    this.count += count;
    if (this.examples.length < this.keep) this.examples.push(id.toString());
  };
}

/** The high half (id-sort.ts) from which an ID is in a tag's fallback space. */
const FALLBACK_HI = Number(FALLBACK_FLOOR >> 32n);

/** Whether the ID with these halves is in the fallback space (from 2^62). */
export const inFallbackSpace = (hi: number): boolean => hi >= FALLBACK_HI;

/**
 * The fallback IDs of a segment tag (docs/operations.md#fallback-space):
 * decoded, counted, and checked against the fallback worker-id leases of the
 * lease ledger (who held the worker id at the millisecond) and this machine's
 * clock. Fed only IDs from 2^62, in increasing order.
 */
export class FallbackIds {
  count = 0;
  distinct = 0;
  min: bigint | undefined;
  max: bigint | undefined;
  /** Store-clock ms of the earliest and latest fallback ID. */
  firstMs: number | undefined;
  lastMs: number | undefined;
  readonly workerIds = new Set<number>();
  unheld = 0;
  readonly unheldExamples: string[] = [];
  future = 0;
  readonly futureExamples: string[] = [];
  private readonly futureMs: number;

  constructor(
    private readonly o: {
      readonly nowMs: number;
      /** From the lease ledger: whether a client held the fallback worker id at the millisecond; undefined: not checked. */
      readonly held?: ((workerId: number, ms: number) => boolean) | undefined;
    },
    private readonly keep = 1000,
  ) {
    this.futureMs = o.nowMs + FUTURE_SLACK_MS;
  }

  readonly add = (hi: number, lo: number, count: number): void => {
    const id = halvesToBigInt(hi, lo);
    const f = decodeFallbackId(id);
    if (f === undefined) return;
    if (this.distinct === 0) this.min = id;
    this.max = id;
    this.distinct++;
    this.count += count;
    this.workerIds.add(f.workerId);
    this.firstMs = Math.min(this.firstMs ?? f.timestampMs, f.timestampMs);
    this.lastMs = Math.max(this.lastMs ?? f.timestampMs, f.timestampMs);
    const described = `${id} (worker id ${f.workerId}, ${new Date(f.timestampMs).toISOString()}, sequence ${f.sequence})`;
    if (f.timestampMs > this.futureMs) {
      this.future += count;
      if (this.futureExamples.length < this.keep) this.futureExamples.push(described);
    }
    if (this.o.held !== undefined && !this.o.held(f.workerId, f.timestampMs)) {
      this.unheld += count;
      if (this.unheldExamples.length < this.keep) this.unheldExamples.push(described);
    }
  };
}

/** An `allocate` row of the ledger as the time check needs it: its range and when the store recorded it. */
export interface RecordedRange extends CoveringRange {
  /** The store's clock when the range was recorded (ms since 1970). */
  readonly atMs: number;
}

/**
 * IDs issued before their range was recorded: a business row older than the
 * newest `allocate` row whose range holds its ID. The store records a range
 * in the transaction that hands it out, so every ID of it is issued after
 * that row; a row written earlier holds an ID some other range issued first,
 * one the store no longer knows (a restore: a server re-took the range and
 * re-issued the ID). Only allocations count: a fence's row covers IDs the
 * operator declared issued before it (after a restore, exactly these), and
 * a give-back's were never issued by the server that returned them.
 * `marginMs` absorbs clock skew between the business rows' clock and the
 * store's, and rows stamped at the start of a transaction that drew its ID
 * later. Rows arrive in any order (as the query streams them).
 */
export class IssuedBeforeRecorded {
  count = 0;
  /** Rows checked (they had a time). */
  checked = 0;
  readonly examples: string[] = [];
  private readonly ranges: RecordedRange[];
  /** The highest `last` among ranges[0..i]: how far back a range can still hold an ID. */
  private readonly reach: bigint[];

  constructor(
    allocations: readonly RecordedRange[],
    private readonly marginMs: number,
    private readonly keep = 1000,
  ) {
    this.ranges = [...allocations].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    let top = -1n;
    this.reach = this.ranges.map((r) => (top = r.last > top ? r.last : top));
  }

  add(id: bigint, timeMs: number): void {
    this.checked++;
    // The last range whose first is at or below the ID, then back while a range can still reach it.
    let lo = 0;
    let hi = this.ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.ranges[mid] as RecordedRange).first <= id) lo = mid + 1;
      else hi = mid;
    }
    let newest: RecordedRange | undefined;
    for (let i = lo - 1; i >= 0 && (this.reach[i] as bigint) >= id; i--) {
      const r = this.ranges[i] as RecordedRange;
      if (r.last < id || (r.stride > 1 && (id - r.first) % BigInt(r.stride) !== 0n)) continue;
      if (newest === undefined || r.atMs > newest.atMs) newest = r;
    }
    if (newest === undefined || timeMs >= newest.atMs - this.marginMs) return;
    this.count++;
    if (this.examples.length < this.keep)
      this.examples.push(
        `${id}: row of ${new Date(timeMs).toISOString()}, range [${newest.first}, ${newest.last}] recorded at ${new Date(newest.atMs).toISOString()}`,
      );
  }
}

/**
 * How far a tag's ledger reached: the largest range it ever recorded (a
 * dynamic step grows far above the stored one, and a server holds up to two
 * such ranges ahead of the IDs it handed out) and the highest ID an
 * allocation or a fence covered. A fence proposed after a restore must clear
 * both, or the servers that kept their marks go on refusing.
 */
export class LedgerReach {
  /** In IDs of the tag's space (a range of a multi-store set spans step × stride). */
  largestRange = 0n;
  top: bigint | undefined;

  add(e: { readonly kind: string; readonly first: bigint; readonly last: bigint; readonly stride: number }): void {
    if (e.kind === 'give-back') return;
    if (this.top === undefined || e.last > this.top) this.top = e.last;
    const span = e.last - e.first + BigInt(Math.max(1, e.stride));
    if (e.kind === 'allocate' && span > this.largestRange) this.largestRange = span;
  }
}
