/**
 * Date-stamped order numbers: the day in a configured time zone, then a
 * counter that starts again each day, optionally with a check symbol:
 *
 *   20261205-000123      day 2026-12-05 (Asia/Shanghai, say), the day's 123rd number
 *   20261205-000123H     the same with the mod-37 check symbol of 20261205000123
 *
 * This file is the pure part: the day of an instant in an IANA time zone
 * (through Intl, so DST and offsets are the platform's tz data), the
 * text both ways, the per-day segment tag (`ORD:20261205`) the counter is
 * drawn from, and the rule that the day never goes back for an issuer. The
 * issuing, on the segment store, is `service/daily-numbers.ts`.
 *
 * Why a tag per day: the day's counter is then an ordinary segment tag, so a
 * number is never issued twice for a day by any restart or server (the
 * store's guarantee); and whichever day an issuer picks, the pair (day,
 * counter) is unique. The day rule only keeps the numbers in date order
 * when a clock is stepped back over midnight.
 */
import { InvalidArgumentError, UnavailableError } from '../errors.js';
import { crockford32CheckSymbol } from '../codecs/crockford32.js';
import { assertTag } from '../validate.js';

export interface DailyNumberFormat {
  /** IANA time zone whose calendar day stamps the number (`Asia/Shanghai`, `UTC`). */
  readonly timeZone: string;
  /** Counter digits, zero-padded, 1..12. Default 6: a day's counter then ends at 999999 (ID_SPACE_EXHAUSTED past it, never wrapped). */
  readonly digits?: number;
  /** Append the Crockford mod-37 check symbol of the number's digits. Default false. */
  readonly check?: boolean;
}

export const DAILY_DEFAULT_DIGITS = 6;
const DAY = /^[0-9]{8}$/;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      calendar: 'gregory',
      numberingSystem: 'latn',
    });
    if (formatters.size > 64) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * The IANA name as the platform spells it (`asia/shanghai` → `Asia/Shanghai`).
 * Throws INVALID_ARGUMENT naming `field` for a name Intl does not know.
 */
export function validateTimeZone(timeZone: unknown, field = 'timeZone'): string {
  if (typeof timeZone !== 'string' || timeZone === '' || timeZone.length > 64) {
    throw new InvalidArgumentError(`${field} must be an IANA time zone name such as Asia/Shanghai or UTC`);
  }
  try {
    return formatter(timeZone).resolvedOptions().timeZone;
  } catch {
    throw new InvalidArgumentError(`${field} ${JSON.stringify(timeZone)} is not an IANA time zone name (such as Asia/Shanghai or UTC)`);
  }
}

/**
 * `YYYYMMDD` of the instant `ms` in `timeZone` (validated first).
 * @example dayStamp(Date.UTC(2026, 11, 4, 16), 'Asia/Shanghai') === '20261205' // 00:00 in Shanghai, still the 4th in UTC
 */
export function dayStamp(ms: number, timeZone: string): string {
  if (!Number.isFinite(ms)) throw new InvalidArgumentError('time must be a finite number of ms');
  let y = '';
  let m = '';
  let d = '';
  for (const p of formatter(validateTimeZone(timeZone)).formatToParts(ms)) {
    if (p.type === 'year') y = p.value;
    else if (p.type === 'month') m = p.value;
    else if (p.type === 'day') d = p.value;
  }
  if (y.length !== 4) throw new InvalidArgumentError(`time ${ms} is outside years 1000-9999`);
  return y + m + d;
}

/** The day an issuer uses: today, unless it already issued on a later day (a clock stepped back): then that day. */
export function issuingDay(today: string, lastDay: string | undefined): string {
  return lastDay !== undefined && lastDay > today ? lastDay : today;
}

/** The segment tag that holds `baseTag`'s counter for `day`: `ORD:20261205`. */
export function dailyTag(baseTag: string, day: string): string {
  if (!DAY.test(day)) throw new InvalidArgumentError(`day must be YYYYMMDD, got ${JSON.stringify(day)}`);
  return assertTag(`${baseTag}:${day}`);
}

/** The day of a per-day tag of `baseTag`, or undefined when `tag` is not one. */
export function dayOfDailyTag(baseTag: string, tag: string): string | undefined {
  const head = `${baseTag}:`;
  if (!tag.startsWith(head)) return undefined;
  const day = tag.slice(head.length);
  return DAY.test(day) ? day : undefined;
}

/** Checks a format; returns it with defaults filled in and the time zone spelled as Intl does. */
export function validateDailyNumberFormat(value: unknown, field = 'daily'): Required<DailyNumberFormat> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidArgumentError(`${field} must be an object`);
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== 'timeZone' && k !== 'digits' && k !== 'check')
      throw new InvalidArgumentError(`${field}.${k} is not a field (timeZone, digits, check)`);
  }
  const timeZone = validateTimeZone(o['timeZone'], `${field}.timeZone`);
  const digits = o['digits'] ?? DAILY_DEFAULT_DIGITS;
  if (typeof digits !== 'number' || !Number.isInteger(digits) || digits < 1 || digits > 12) {
    throw new InvalidArgumentError(`${field}.digits must be an integer from 1 to 12`);
  }
  const check = o['check'] ?? false;
  if (typeof check !== 'boolean') throw new InvalidArgumentError(`${field}.check must be true or false`);
  return { timeZone, digits, check };
}

/** Counter digits as typed (`--digits`, `?digits=`): `1`..`12`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseDailyDigits(text: string | undefined, field = 'digits'): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]?$/.test(text) || Number(text) > 12)
    throw new InvalidArgumentError(`${field} must be an integer from 1 to 12, got ${JSON.stringify(String(text).slice(0, 20))}`);
  return Number(text);
}

/**
 * `YYYYMMDD-counter[check]`. A counter that needs more than `digits` digits
 * throws ID_SPACE_EXHAUSTED: the day's numbers are used up, never wrapped.
 * @example formatDailyNumber('20261205', 123, { digits: 6, check: true }) === '20261205-000123H'
 */
export function formatDailyNumber(day: string, counter: bigint | number, o: { digits?: number; check?: boolean } = {}): string {
  const digits = o.digits ?? DAILY_DEFAULT_DIGITS;
  if (!DAY.test(day)) throw new InvalidArgumentError(`day must be YYYYMMDD, got ${JSON.stringify(day)}`);
  const c = typeof counter === 'number' ? BigInt(counter) : counter;
  if (c < 1n) throw new InvalidArgumentError('counter must be at least 1');
  const text = c.toString();
  if (text.length > digits) {
    throw new UnavailableError('ID_SPACE_EXHAUSTED', `day ${day} has used all ${digits}-digit numbers (counter ${text}): give more digits`);
  }
  const body = `${day}-${text.padStart(digits, '0')}`;
  return o.check === true ? body + crockford32CheckSymbol(BigInt(day + text.padStart(digits, '0'))) : body;
}

export interface ParsedDailyNumber {
  readonly day: string;
  readonly counter: bigint;
}

/**
 * Reads `YYYYMMDD-counter[check]` back. With `check`, the last symbol must be
 * the right check symbol (a mistyped digit is caught); with `digits`, the
 * counter must have exactly that many. Throws INVALID_ARGUMENT.
 */
export function parseDailyNumber(text: string, o: { digits?: number; check?: boolean } = {}): ParsedDailyNumber {
  const shown = JSON.stringify(String(text).slice(0, 64));
  // With a check symbol the last character is it, even when it is a digit.
  const pattern = o.check === true ? /^([0-9]{8})-([0-9]{1,12})(.)$/ : /^([0-9]{8})-([0-9]{1,12})()$/;
  const m = typeof text === 'string' ? pattern.exec(text) : null;
  if (m === null) {
    throw new InvalidArgumentError(
      `${shown} is not a daily number: expected YYYYMMDD-counter${o.check === true ? ' and a check symbol' : ''}`,
    );
  }
  const [, day, digitsText, symbol] = m as unknown as [string, string, string, string];
  if (o.check === true && crockford32CheckSymbol(BigInt(day + digitsText)) !== symbol.toUpperCase()) {
    throw new InvalidArgumentError(`${shown}: the check symbol does not match (mistyped number?)`);
  }
  if (o.digits !== undefined && digitsText.length !== o.digits) {
    throw new InvalidArgumentError(`${shown} is not a daily number: its counter must have ${o.digits} digits`);
  }
  const counter = BigInt(digitsText);
  if (counter < 1n) throw new InvalidArgumentError(`${shown} is not a daily number: counters start at 1`);
  const month = Number(day.slice(4, 6));
  const date = Number(day.slice(6, 8));
  if (month < 1 || month > 12 || date < 1 || date > 31)
    throw new InvalidArgumentError(`${shown} is not a daily number: ${day} is not a date`);
  return { day, counter };
}
