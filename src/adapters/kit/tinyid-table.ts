/**
 * What the stores on Tinyid's own table (`tiny_id_info`) share, whatever the
 * backend: the names, the row shape, and how Tinyid's numbers map onto
 * Sequoia's.
 *
 * Tinyid's table (tinyid-server/db.sql in didi/tinyid):
 *   id bigint AUTO_INCREMENT PK, biz_type varchar(63) UNIQUE, begin_id bigint,
 *   max_id bigint, step int, delta int DEFAULT 1, remainder int DEFAULT 0,
 *   create_time, update_time, version bigint
 * Its DbSegmentIdServiceImpl allocates optimistically, up to 3 tries in one
 * READ COMMITTED transaction:
 *   select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version
 *     from tiny_id_info where biz_type = ?
 *   update tiny_id_info set max_id = ?, update_time = now(), version = version + 1
 *     where id = ? and max_id = ? and version = ? and biz_type = ?
 * and its segment is (old max_id, new max_id] — max_id is the last ID taken,
 * not the next one — of which it hands out only the IDs with
 * `id % delta == remainder` (SegmentId.init/nextId).
 *
 * In Sequoia's terms: a tag's maxId (the exclusive end, where the next range
 * starts) is the first ID of the residue class above Tinyid's max_id, and an
 * allocation is a range of stride `delta` and offset `remainder`, whose step
 * counts IDs (a stored Tinyid step of S yields S / delta of them). With the
 * default delta 1 it is the half-open range [max_id + 1, new max_id + 1).
 */
import { InvalidArgumentError } from '../../core/errors.js';
import { MAX_ID } from '../../core/id.js';
import type { Allocation, TagInfo } from '../../ports/segment-store.js';
import { LEGACY_GENERATION } from './segment-rules.js';
import type { ForeignSchema } from './side-table.js';

/** The side table also keeps the description: Tinyid's table has none. */
export const TINYID_SCHEMA: ForeignSchema = {
  system: 'Tinyid',
  defaultTable: 'tiny_id_info',
  defaultSideTable: 'sequoia_tinyid_state',
  keyColumn: 'source_table',
  describes: true,
};
/** Tinyid gives up after 3 lost races (Constants.RETRY); Sequoia, sharing the row with many allocators, keeps trying longer. */
export const TINYID_RETRIES = 50;

/** A tiny_id_info row as read (BIGINTs as text), with the side table's state joined in where asked. */
export interface TinyidRow {
  id: string | number;
  biz_type: string;
  max_id: string;
  step: number | string | null;
  delta: number | string;
  remainder: number | string;
  version: string | number;
  update_time?: Date | string | null;
  fence_epoch?: number | string | null;
  generation?: string | number | null;
  /** Sequoia's description of the tag (Tinyid's table has none): kept in the side table. */
  description?: string | null;
}

/** The residue rule of a row, checked: Tinyid itself would loop or hand out nothing outside it. */
export interface Residue {
  readonly delta: bigint;
  readonly remainder: bigint;
}

export function residueOf(r: TinyidRow): Residue {
  const delta = BigInt(r.delta);
  const remainder = BigInt(r.remainder);
  if (delta < 1n || remainder < 0n || remainder >= delta) {
    throw new InvalidArgumentError(
      `tiny_id_info row ${JSON.stringify(r.biz_type)}: delta must be at least 1 and remainder from 0 to delta-1 (found delta ${delta}, remainder ${remainder})`,
    );
  }
  return { delta, remainder };
}

/** The largest ID of the class at or below `x` (x may be -1: a tag starting at 0). */
function classFloor(x: bigint, { delta, remainder }: Residue): bigint {
  const m = (((x - remainder) % delta) + delta) % delta;
  return x - m;
}

/** Where the next range starts after Tinyid's max_id `b`: the first ID of the class above it. */
export function endAfter(b: bigint, c: Residue): bigint {
  return classFloor(b, c) + c.delta;
}

/** The tag's minimum step as Sequoia counts it: IDs per segment (at least 1). */
export function storedStepOf(r: TinyidRow, c: Residue): number {
  const s = Number(r.step ?? 0);
  return Math.max(1, Math.floor(s / Number(c.delta)));
}

/**
 * Tinyid's new max_id for one allocation from `b`: its own `max_id + step`
 * when Sequoia takes the stored step, else `step` IDs of the class (`step *
 * delta` numbers: any window of that width holds exactly `step` of them).
 * Undefined when the range would pass 2^63-1.
 */
export function nextMaxId(b: bigint, r: TinyidRow, c: Residue, step: number | undefined): bigint | undefined {
  const stored = Number(r.step ?? 0);
  if (step === undefined && stored < 1) {
    throw new InvalidArgumentError(`tiny_id_info row ${JSON.stringify(r.biz_type)}: step must be at least 1 (found ${stored})`);
  }
  const width = step === undefined ? (BigInt(stored) < c.delta ? c.delta : BigInt(stored)) : BigInt(step) * c.delta;
  const next = b + width;
  return endAfter(next, c) > MAX_ID ? undefined : next;
}

/** Sequoia's answer for Tinyid's segment (b, next]: its IDs of the class, as a range of stride delta. */
export function allocationOf(
  b: bigint,
  next: bigint,
  r: TinyidRow,
  c: Residue,
  side: { fenceEpoch: number; generation: string },
): Allocation {
  const first = endAfter(b, c);
  const end = endAfter(next, c);
  const count = Number((end - first) / c.delta);
  const stride = c.delta === 1n ? {} : { stride: Number(c.delta), offset: Number(c.remainder) };
  return { maxId: end, step: count, storedStep: storedStepOf(r, c), ...side, ...stride };
}

/** Tinyid's max_id that makes the next range start at `to` or above (fence, give-back). */
export function maxIdBelow(to: bigint): bigint {
  return to - 1n;
}

/** A row for listing: a row whose residue rule is broken still shows (as delta 1); allocating from it is refused. */
export function tagInfoFromTinyidRow(r: TinyidRow): TagInfo {
  let c: Residue;
  try {
    c = residueOf(r);
  } catch {
    c = { delta: 1n, remainder: 0n };
  }
  const t = r.update_time;
  return {
    tag: r.biz_type,
    maxId: endAfter(BigInt(r.max_id), c),
    step: storedStepOf(r, c),
    description: r.description ?? '',
    updatedAt: t instanceof Date ? t : t === null || t === undefined ? new Date(0) : new Date(t),
    fenceEpoch: Number(r.fence_epoch ?? 0),
    generation: r.generation === null || r.generation === undefined ? LEGACY_GENERATION : String(r.generation),
  };
}

/** A pause after a lost race, growing and jittered, so the losers do not all come back at once. */
export function raceBackoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(50, 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * One allocation per tag at a time within a store: the optimistic update
 * only lets one of a row's concurrent allocators win, so this process's own
 * callers wait in line instead of racing each other (and the row's other
 * servers) on the database.
 */
export class PerTagQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(tag: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(tag) ?? Promise.resolve();
    const mine = before.then(fn, fn);
    const tail = mine.catch(() => {});
    this.tails.set(tag, tail);
    void tail.then(() => {
      if (this.tails.get(tag) === tail) this.tails.delete(tag);
    });
    return mine;
  }
}
