import { describe, expect, it } from 'vitest';
import {
  dailyTag,
  dayOfDailyTag,
  dayStamp,
  formatDailyNumber,
  issuingDay,
  parseDailyNumber,
  validateDailyNumberFormat,
  validateTimeZone,
} from './daily-number.js';
import { SequoiaError } from '../errors.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof SequoiaError ? e.code : 'not a SequoiaError';
  }
  return undefined;
}

describe('daily numbers: the day', () => {
  it('is the calendar day in the configured zone: Shanghai is a day ahead of UTC for 8 hours', () => {
    const shanghaiMidnight = Date.UTC(2026, 11, 4, 16, 0, 0); // 2026-12-05 00:00 in UTC+8
    expect(dayStamp(shanghaiMidnight, 'Asia/Shanghai')).toBe('20261205');
    expect(dayStamp(shanghaiMidnight, 'UTC')).toBe('20261204');
    expect(dayStamp(shanghaiMidnight - 1, 'Asia/Shanghai')).toBe('20261204');
    expect(dayStamp(Date.UTC(2026, 11, 5, 0, 0, 0) - 1, 'UTC')).toBe('20261204');
    expect(dayStamp(Date.UTC(2026, 11, 5, 0, 0, 0), 'UTC')).toBe('20261205');
  });

  it('follows DST: New York midnight is 04:00 UTC in summer and 05:00 UTC in winter, on the switch days too', () => {
    // 2026-03-08: clocks go 02:00 → 03:00 (EST → EDT); 2026-11-01: 02:00 → 01:00.
    expect(dayStamp(Date.UTC(2026, 2, 8, 4, 59, 59, 999), 'America/New_York')).toBe('20260307');
    expect(dayStamp(Date.UTC(2026, 2, 8, 5, 0, 0), 'America/New_York')).toBe('20260308');
    expect(dayStamp(Date.UTC(2026, 2, 9, 3, 59, 59, 999), 'America/New_York')).toBe('20260308'); // a 23-hour day
    expect(dayStamp(Date.UTC(2026, 2, 9, 4, 0, 0), 'America/New_York')).toBe('20260309');
    expect(dayStamp(Date.UTC(2026, 10, 2, 4, 59, 59, 999), 'America/New_York')).toBe('20261101'); // a 25-hour day
    expect(dayStamp(Date.UTC(2026, 10, 2, 5, 0, 0), 'America/New_York')).toBe('20261102');
  });

  it('takes IANA names only, spelled as Intl spells them', () => {
    expect(validateTimeZone('asia/shanghai')).toBe('Asia/Shanghai');
    expect(codeOf(() => validateTimeZone('Mars/Olympus'))).toBe('INVALID_ARGUMENT');
    expect(() => validateTimeZone('Mars/Olympus', 'daily.timeZone')).toThrow(/daily.timeZone "Mars\/Olympus" is not an IANA time zone/);
    expect(codeOf(() => validateTimeZone(''))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => dayStamp(0, 'Nowhere'))).toBe('INVALID_ARGUMENT');
  });

  it('never goes back for an issuer', () => {
    expect(issuingDay('20261205', undefined)).toBe('20261205');
    expect(issuingDay('20261205', '20261206')).toBe('20261206');
    expect(issuingDay('20261207', '20261206')).toBe('20261207');
  });

  it('has one segment tag per day', () => {
    expect(dailyTag('ORD', '20261205')).toBe('ORD:20261205');
    expect(dayOfDailyTag('ORD', 'ORD:20261205')).toBe('20261205');
    expect(dayOfDailyTag('ORD', 'ORD:x:20261205')).toBeUndefined();
    expect(dayOfDailyTag('ORD', 'ORDERS:20261205')).toBeUndefined();
    expect(codeOf(() => dailyTag('bad tag', '20261205'))).toBe('INVALID_ARGUMENT');
  });
});

describe('daily numbers: the text', () => {
  it('is YYYYMMDD-counter, zero-padded, optionally with a check symbol', () => {
    expect(formatDailyNumber('20261205', 123)).toBe('20261205-000123');
    expect(formatDailyNumber('20261205', 123n, { digits: 8 })).toBe('20261205-00000123');
    const checked = formatDailyNumber('20261205', 123, { check: true });
    expect(checked).toBe('20261205-000123H'); // 20261205000123 mod 37 = 17 → H
    expect(20261205000123n % 37n).toBe(17n);
    expect(parseDailyNumber(checked, { check: true })).toEqual({ day: '20261205', counter: 123n });
    expect(parseDailyNumber('20261205-000123')).toEqual({ day: '20261205', counter: 123n });
  });

  it('reads a check symbol that is a digit', () => {
    for (let c = 1; c < 200; c++) {
      const t = formatDailyNumber('20261205', c, { check: true });
      expect(parseDailyNumber(t, { check: true, digits: 6 }).counter).toBe(BigInt(c));
    }
  });

  it('catches a mistyped digit with the check symbol, and refuses what is not a daily number', () => {
    expect(() => parseDailyNumber('20261205-000124H', { check: true })).toThrow(/check symbol does not match/);
    expect(() => parseDailyNumber('20261205-000123', { check: true })).toThrow(/check symbol does not match/);
    expect(codeOf(() => parseDailyNumber('2026125-000123'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => parseDailyNumber('20261205-000123H'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => parseDailyNumber('20261305-000123'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => parseDailyNumber('20261205-000000'))).toBe('INVALID_ARGUMENT');
    expect(() => parseDailyNumber('20261205-0123', { digits: 6 })).toThrow(/6 digits/);
  });

  it('never wraps: a counter past its digits is ID_SPACE_EXHAUSTED', () => {
    expect(formatDailyNumber('20261205', 999999)).toBe('20261205-999999');
    expect(codeOf(() => formatDailyNumber('20261205', 1000000))).toBe('ID_SPACE_EXHAUSTED');
    expect(codeOf(() => formatDailyNumber('20261205', 0))).toBe('INVALID_ARGUMENT');
  });

  it('validates a format naming the field', () => {
    expect(validateDailyNumberFormat({ timeZone: 'utc' })).toEqual({ timeZone: 'UTC', digits: 6, check: false });
    expect(() => validateDailyNumberFormat({ timeZone: 'UTC', digits: 13 })).toThrow(/daily.digits must be an integer from 1 to 12/);
    expect(() => validateDailyNumberFormat({ timeZone: 'UTC', width: 3 })).toThrow(/daily.width is not a field/);
    expect(() => validateDailyNumberFormat({ timeZone: 'UTC', check: 'yes' })).toThrow(/daily.check must be true or false/);
  });
});
