/**
 * What every `IdSource` shares: the size of the batches it hands over, how a
 * first-column value becomes decimal text (never through a double, so no ID
 * above 2^53 is rounded), how the time column is found and read, and how a
 * database that cannot be reached is told to the operator.
 */
import { InvalidArgumentError } from '../../../core/errors.js';

export const ID_BATCH = 20_000;

/** A first-column value as decimal text; NULL stays null. */
function idText(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

/**
 * Below this a number is seconds since 1970, from it milliseconds: 10^11 s is
 * the year 5138, 10^11 ms is 1973, before any row an audit reads.
 */
const SECONDS_BELOW = 1e11;

/**
 * A time-column value in ms since 1970 (null: NULL). A date as the driver
 * gives it (PostgreSQL's `timestamptz` exactly; `timestamp` and MySQL's
 * `DATETIME` read in this process's time zone, as the drivers do); a number
 * (seconds or milliseconds since 1970, told apart by size); text: digits as a
 * number, else an ISO date, read as UTC when it names no zone (SQLite's
 * CURRENT_TIMESTAMP and datetime('now') write UTC that way).
 */
function timeMs(v: unknown, row: number): number | null {
  if (v === null || v === undefined) return null;
  let ms = NaN;
  if (v instanceof Date) ms = v.getTime();
  else if (typeof v === 'number' || typeof v === 'bigint') ms = fromNumber(Number(v));
  else if (typeof v === 'string') {
    const s = v.trim();
    if (/^[0-9]+(\.[0-9]+)?$/.test(s)) ms = fromNumber(Number(s));
    else if (/^\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?$/.test(s))
      ms = Date.parse(`${s.replace(' ', 'T')}${s.length > 10 ? 'Z' : ''}`);
    else ms = Date.parse(s.replace(' ', 'T'));
  }
  if (!Number.isFinite(ms))
    throw new InvalidArgumentError(`row ${row}: --time-column value is not a time: ${JSON.stringify(String(v).slice(0, 40))}`);
  return ms;
}

const fromNumber = (n: number): number => (n < SECONDS_BELOW ? n * 1000 : n);

/** The 0-based index of `--time-column` (a name, or a 1-based number) among the query's columns. */
export function timeColumnIndex(column: string, names: readonly string[]): number {
  if (/^[0-9]+$/.test(column)) {
    const n = Number(column);
    if (n >= 2 && n <= names.length) return n - 1;
    throw new InvalidArgumentError(
      `--time-column ${column}: the query has ${names.length} column${names.length === 1 ? '' : 's'}, and the first is the ID`,
    );
  }
  const i = names.indexOf(column);
  if (i < 1)
    throw new InvalidArgumentError(
      `--time-column: the query selects no column ${JSON.stringify(column)} after the ID (its columns: ${names.join(', ')})`,
    );
  return i;
}

/** Collects rows for `onBatch`, handing over each full batch of ID_BATCH and, at `flush`, the rest. */
export class IdBatcher {
  private batch: Array<string | null> = [];
  private times: Array<number | null> | undefined;
  private rows = 0;

  constructor(
    private readonly onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void,
    withTimes = false,
  ) {
    if (withTimes) this.times = [];
  }

  push(v: unknown, time?: unknown): void {
    this.rows++;
    this.batch.push(idText(v));
    this.times?.push(timeMs(time, this.rows));
    if (this.batch.length >= ID_BATCH) this.flush();
  }

  flush(): void {
    if (this.batch.length === 0) return;
    const b = this.batch;
    const t = this.times;
    this.batch = [];
    if (t !== undefined) this.times = [];
    this.onBatch(b, t);
  }
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused: nothing listens at the host and port of --db (is the database running?)',
  ENOTFOUND: 'host not found: check the host in --db',
  EAI_AGAIN: 'host not found (the DNS lookup failed): check the host in --db',
  ETIMEDOUT: 'the connection timed out: check the host and port in --db, and firewalls',
  ECONNRESET: 'the database closed the connection',
  EHOSTUNREACH: 'no route to the host in --db',
  '28P01': 'authentication failed: check the user and password in --db',
  '28000': 'authentication failed: the database refused the user in --db',
  '1045': 'authentication failed: access denied for the user in --db (check user and password)',
  '1698': 'authentication failed: access denied for the user in --db (check user and password)',
  '3D000': 'no such database: check the database name in --db',
  '1049': 'no such database: check the database name in --db',
};

/**
 * A failure of the business database as the operator reads it: a connection
 * that could not be made in words, without the driver's errno text or the
 * host (it is in the operator's own --db); the database's own answer to the
 * query (a syntax error, a missing table) as it gave it.
 */
export function idSourceError(engine: string, e: unknown): Error {
  if (e instanceof InvalidArgumentError) return e;
  const err = e as { code?: unknown; errno?: unknown; message?: unknown };
  const keys = [err.code, err.errno].filter((k) => k !== undefined).map(String);
  const known = keys.map((k) => UNREACHABLE[k]).find((m) => m !== undefined);
  if (known !== undefined) return new InvalidArgumentError(`--db: cannot read the ${engine} database: ${known}`, { cause: e });
  const said = typeof err.message === 'string' && err.message !== '' ? err.message : 'unknown error';
  return new InvalidArgumentError(`--db: the ${engine} database answered: ${said}`, { cause: e });
}
