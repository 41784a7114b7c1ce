/**
 * Tinyid's own table (`tiny_id_info`) as the peer store (kit/peer/peer-store.ts)
 * uses it, whatever the backend: the names, the row shape, the statements in
 * each SQL dialect, Tinyid's own allocation, and how Tinyid's numbers map
 * onto Sequoia's.
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
import { InvalidArgumentError, TagNotFoundError, UnavailableError } from '../../../core/errors.js';
import { MAX_ID } from '../../../core/id.js';
import type { Allocation, NewTag, TagInfo, TagUpdate } from '../../../ports/segment-store.js';
import type { PeerSchema, PeerStatements, PeerTable } from './peer-store.js';
import { DEFAULT_STEP, exhausted, LEGACY_GENERATION } from '../segment/segment-rules.js';
import type { RunSql } from '../sql/sql-database.js';

/** The side table also keeps the description: Tinyid's table has none. */
export const TINYID_SCHEMA: PeerSchema = {
  system: 'Tinyid',
  defaultTable: 'tiny_id_info',
  defaultSideTable: 'sequoia_tinyid_state',
  keyColumn: 'source_table',
  tagColumn: 'biz_type',
  describes: true,
  optimistic: true,
  table: (name, dialect) => new TinyidTable(dialect === 'mysql' ? mysqlTinyid(name) : postgresTinyid(name)),
};
/** Tinyid gives up after 3 lost races (Constants.RETRY); Sequoia, sharing the row with many allocators, keeps trying longer. */
const TINYID_RETRIES = 50;

/** A tiny_id_info row as read (BIGINTs as text), with the side table's state joined in where asked. */
interface TinyidRow {
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
interface Residue {
  readonly delta: bigint;
  readonly remainder: bigint;
}

function residueOf(r: TinyidRow): Residue {
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
function endAfter(b: bigint, c: Residue): bigint {
  return classFloor(b, c) + c.delta;
}

/** The tag's minimum step as Sequoia counts it: IDs per segment (at least 1). */
function storedStepOf(r: TinyidRow, c: Residue): number {
  const s = Number(r.step ?? 0);
  return Math.max(1, Math.floor(s / Number(c.delta)));
}

/**
 * Tinyid's new max_id for one allocation from `b`: its own `max_id + step`
 * when Sequoia takes the stored step, else `step` IDs of the class (`step *
 * delta` numbers: any window of that width holds exactly `step` of them).
 * Undefined when the range would pass 2^63-1.
 */
function nextMaxId(b: bigint, r: TinyidRow, c: Residue, step: number | undefined): bigint | undefined {
  const stored = Number(r.step ?? 0);
  if (step === undefined && stored < 1) {
    throw new InvalidArgumentError(`tiny_id_info row ${JSON.stringify(r.biz_type)}: step must be at least 1 (found ${stored})`);
  }
  const width = step === undefined ? (BigInt(stored) < c.delta ? c.delta : BigInt(stored)) : BigInt(step) * c.delta;
  const next = b + width;
  return endAfter(next, c) > MAX_ID ? undefined : next;
}

/** Sequoia's answer for Tinyid's segment (b, next]: its IDs of the class, as a range of stride delta. */
function allocationOf(b: bigint, next: bigint, r: TinyidRow, c: Residue): Omit<Allocation, 'fenceEpoch' | 'generation'> {
  const first = endAfter(b, c);
  const end = endAfter(next, c);
  const count = Number((end - first) / c.delta);
  const stride = c.delta === 1n ? {} : { stride: Number(c.delta), offset: Number(c.remainder) };
  return { maxId: end, step: count, storedStep: storedStepOf(r, c), ...stride };
}

/** Tinyid's max_id that makes the next range start at `to` or above (fence, give-back). */
function maxIdBelow(to: bigint): bigint {
  return to - 1n;
}

/** A row for listing: a row whose residue rule is broken still shows (as delta 1); allocating from it is refused. */
function tagInfoFromTinyidRow(r: TinyidRow): TagInfo {
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
function raceBackoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(50, 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface TinyidStatements extends PeerStatements {
  /** Tinyid's read of the row before its optimistic update. Values: [tag]. */
  readonly read: string;
  /** Tinyid's optimistic update. Values: [new max_id, id, max_id read, version read, tag]. */
  readonly take: string;
}

/**
 * Tinyid's statements in MySQL. Every write of Sequoia's that moves max_id
 * (fence, give-back) also bumps `version`, so a Tinyid server that read the
 * row before it loses its race and reads again.
 */
function mysqlTinyid(t: string): TinyidStatements {
  return {
    columns: 'f.id, f.biz_type, f.max_id, f.step, f.delta, f.remainder, f.version, f.update_time',
    read: `select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version from ${t} where biz_type = ?`,
    take: `update ${t} set max_id = CAST(? AS SIGNED), update_time = now(), version = version + 1
       where id = ? and max_id = CAST(? AS SIGNED) and version = CAST(? AS SIGNED) and biz_type = ?`,
    insert: `INSERT INTO ${t} (biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version)
       VALUES (?, CAST(? AS SIGNED), CAST(? AS SIGNED), ?, 1, 0, now(), now(), 0)`,
    update: `UPDATE ${t} SET step = COALESCE(? * delta, step), update_time = now() WHERE biz_type = ?`,
    remove: `DELETE FROM ${t} WHERE biz_type = ?`,
    fence: `UPDATE ${t} SET max_id = GREATEST(max_id, CAST(? AS SIGNED)), update_time = now(), version = version + 1 WHERE biz_type = ?`,
    lock: `SELECT id, biz_type, max_id, step, delta, remainder, version FROM ${t} WHERE biz_type = ? FOR UPDATE`,
    set: `UPDATE ${t} SET max_id = CAST(? AS SIGNED), update_time = now(), version = version + 1 WHERE biz_type = ?`,
    retire: `UPDATE ${t} SET biz_type = ?, update_time = now(), version = version + 1 WHERE biz_type = ?`,
  };
}

/** Tinyid's statements in PostgreSQL (BIGINTs read as text); `version` as in MySQL. */
function postgresTinyid(t: string): TinyidStatements {
  return {
    columns:
      'f.id::text AS id, f.biz_type, f.max_id::text AS max_id, f.step, f.delta, f.remainder, f.version::text AS version, f.update_time',
    read: `SELECT id::text AS id, biz_type, begin_id::text AS begin_id, max_id::text AS max_id, step, delta, remainder,
              create_time, update_time, version::text AS version
       FROM ${t} WHERE biz_type = $1`,
    take: `UPDATE ${t} SET max_id = $1::bigint, update_time = now(), version = version + 1
       WHERE id = $2::bigint AND max_id = $3::bigint AND version = $4::bigint AND biz_type = $5`,
    insert: `INSERT INTO ${t} (biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version)
       VALUES ($1, $2::bigint, $3::bigint, $4, 1, 0, now(), now(), 0)`,
    update: `UPDATE ${t} SET step = COALESCE($1::integer * delta, step), update_time = now() WHERE biz_type = $2`,
    remove: `DELETE FROM ${t} WHERE biz_type = $1`,
    fence: `UPDATE ${t} SET max_id = GREATEST(max_id, $1::bigint), update_time = now(), version = version + 1 WHERE biz_type = $2`,
    lock: `SELECT id::text AS id, biz_type, max_id::text AS max_id, step, delta, remainder, version::text AS version
       FROM ${t} WHERE biz_type = $1 FOR UPDATE`,
    set: `UPDATE ${t} SET max_id = $1::bigint, update_time = now(), version = version + 1 WHERE biz_type = $2`,
    retire: `UPDATE ${t} SET biz_type = $1, update_time = now(), version = version + 1 WHERE biz_type = $2`,
  };
}

/** Tinyid's table in one dialect: max_id is the last ID taken, and only the IDs of the row's residue class count. */
class TinyidTable implements PeerTable {
  constructor(readonly sql: TinyidStatements) {}

  /** Tinyid's DbSegmentIdServiceImpl: read the row, then the optimistic update, retried while another allocator wins the race. */
  async allocate(run: RunSql, tag: string, step: number | undefined): Promise<Omit<Allocation, 'fenceEpoch' | 'generation'>> {
    for (let i = 0; i < TINYID_RETRIES; i++) {
      const row = (await run(this.sql.read, [tag])).rows[0] as TinyidRow | undefined;
      if (!row) throw new TagNotFoundError(tag);
      const residue = residueOf(row);
      const b = BigInt(String(row.max_id));
      const next = nextMaxId(b, row, residue, step);
      if (next === undefined) throw exhausted(tag);
      const upd = await run(this.sql.take, [next.toString(), String(row.id), String(row.max_id), String(row.version), row.biz_type]);
      if (upd.count === 1) return allocationOf(b, next, row, residue);
      await raceBackoff(i);
    }
    throw new UnavailableError(
      'STORE_UNAVAILABLE',
      `tag ${JSON.stringify(tag)}: lost the race for the Tinyid row ${TINYID_RETRIES} times`,
      {
        retryAfterMs: 100,
      },
    );
  }

  /** A row as Tinyid's db.sql makes one: begin_id = max_id, delta 1, remainder 0. */
  insertValues(t: NewTag, start: bigint): unknown[] {
    const b = maxIdBelow(start).toString();
    return [t.tag, b, b, t.step ?? DEFAULT_STEP];
  }

  /** Tinyid's row gets `step * delta`: its step counts numbers, Sequoia's IDs. */
  updateValues(tag: string, update: TagUpdate): unknown[] {
    return [update.step ?? null, tag];
  }

  maxIdFor(end: bigint): bigint {
    return maxIdBelow(end);
  }

  endOf(row: unknown): bigint {
    const r = row as TinyidRow;
    return endAfter(BigInt(String(r.max_id)), residueOf(r));
  }

  tagInfo(row: unknown): TagInfo {
    return tagInfoFromTinyidRow(row as TinyidRow);
  }
}
