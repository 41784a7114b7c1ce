/**
 * DailyNumbers: date-stamped order numbers (`20261205-000123`) issued through
 * the segment machinery. The counter of day D for tag ORD is the segment tag
 * `ORD:20261205`, created on the day's first number with counters from 1,
 * so restarts and any number of servers on one store never repeat a number
 * (the store's allocation and this server's rollback guard, as for any tag).
 *
 * The day is today in the configured time zone, except that it never goes
 * back for an issuer: a clock stepped back over midnight keeps issuing on the
 * later day until the clock reaches it again. What an issuer remembers as its
 * last day is the latest day tag in the store, read at start, and then every
 * day it moved to (the day's tag is made in the store before the first number
 * of that day is handed out): so a restart, even with a clock still behind,
 * goes on with the latest day any server has issued on.
 *
 * Numbers of one day are unique, not gap-free: like any segment tag, a server
 * holds a range of counters and gives back only its unused tail on a clean
 * stop (a killed server's tail is skipped), and a busy day's ranges grow.
 */
import { InvalidArgumentError } from '../core/errors.js';
import { type Clock, systemClock } from '../core/clock.js';
import { MAX_COUNT } from '../core/request-rules.js';
import {
  type DailyNumberFormat,
  dailyTag,
  dayOfDailyTag,
  dayStamp,
  formatDailyNumber,
  issuingDay,
  validateDailyNumberFormat,
} from '../core/business-number/daily-number.js';
import { assertStep, assertTag } from '../core/validate.js';
import type { IdService } from './id-service.js';

export interface DailyNumbersOptions {
  /** The segment service the day tags are served by (started). */
  readonly service: IdService;
  /** Base tag: day D's counter is the tag `<tag>:<YYYYMMDD>`. */
  readonly tag: string;
  readonly format: DailyNumberFormat;
  /** The stored step of each new day tag. Default 100: a restart skips at most that many counters per server. */
  readonly step?: number;
  readonly clock?: Clock;
}

export class DailyNumbers {
  readonly tag: string;
  readonly format: Required<DailyNumberFormat>;
  private readonly service: IdService;
  private readonly step: number;
  private readonly clock: Clock;
  /** The latest day issued on (or found in the store); undefined until read. */
  private lastDay: string | undefined;
  private floorRead: Promise<void> | undefined;
  /** Days whose tag exists in the store (or is being made). */
  private readonly made = new Map<string, Promise<void>>();

  constructor(options: DailyNumbersOptions) {
    this.service = options.service;
    this.tag = assertTag(options.tag);
    this.format = validateDailyNumberFormat(options.format, 'format');
    this.step = options.step === undefined ? 100 : assertStep(options.step);
    this.clock = options.clock ?? systemClock;
    dailyTag(this.tag, '20000101'); // the day tags of this base fit the tag rule
  }

  /** The day the next number gets: today in the time zone, or a later day already issued on. */
  day(): string {
    return issuingDay(dayStamp(this.clock.now(), this.format.timeZone), this.lastDay);
  }

  async next(): Promise<string> {
    return (await this.nextMany(1))[0]!;
  }

  /** `count` numbers of one day (1..MAX_COUNT), rising within the call. */
  async nextMany(count: number): Promise<string[]> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_COUNT) {
      throw new InvalidArgumentError(`count must be an integer from 1 to ${MAX_COUNT}`);
    }
    await (this.floorRead ??= this.readFloor());
    const day = this.day();
    await this.makeDay(day);
    const ids = await this.service.nextMany(dailyTag(this.tag, day), count);
    return ids.map((id) => formatDailyNumber(day, BigInt(id), this.format));
  }

  /** The latest day tag of this base in the store: the day never goes back across restarts either. */
  private async readFloor(): Promise<void> {
    try {
      for (const t of await this.service.listTags()) {
        const d = dayOfDailyTag(this.tag, t.tag);
        if (d !== undefined) this.lastDay = issuingDay(d, this.lastDay);
      }
    } catch (e) {
      this.floorRead = undefined; // read again on the next call
      throw e;
    }
  }

  /** Makes day's tag in the store (once per process), then records the day as issued on. */
  private makeDay(day: string): Promise<void> {
    let p = this.made.get(day);
    if (p === undefined) {
      p = this.service
        .ensureTag({ tag: dailyTag(this.tag, day), step: this.step, start: 1n, description: `daily numbers of ${this.tag} for ${day}` })
        .then(() => {
          this.lastDay = issuingDay(day, this.lastDay);
        });
      p.catch(() => this.made.delete(day));
      this.made.set(day, p);
      // Days before the last are never issued on again: forget them.
      for (const d of this.made.keys()) if (d < day) this.made.delete(d);
    }
    return p;
  }
}

/** How many issuers a server keeps (one per base tag and format); past it the oldest is dropped. */
const MAX_ISSUERS = 1024;

/**
 * The daily-number issuers of one server, one per base tag and format (the
 * HTTP route's): made on first use, kept for the life of the server. One
 * dropped past `MAX_ISSUERS` loses nothing a new one does not get back:
 * it reads the latest day from the store first (the day rule above).
 */
export class DailyNumberIssuers {
  private readonly issuers = new Map<string, DailyNumbers>();

  constructor(private readonly options: { readonly service: IdService; readonly clock?: Clock; readonly step?: number }) {}

  /** Whether `issuer(tag, format)` would make a new issuer (it reads the store's tags first). */
  isNew(tag: string, format: Required<DailyNumberFormat>): boolean {
    return !this.issuers.has(issuerKey(tag, format));
  }

  /** The issuer of `tag` in `format` (validated: INVALID_ARGUMENT for a bad tag or format). */
  issuer(tag: string, format: DailyNumberFormat): DailyNumbers {
    const checked = validateDailyNumberFormat(format, 'format');
    const key = issuerKey(tag, checked);
    let n = this.issuers.get(key);
    if (n === undefined) {
      n = new DailyNumbers({ ...this.options, tag, format: checked });
      if (this.issuers.size >= MAX_ISSUERS) this.issuers.delete(this.issuers.keys().next().value as string);
      this.issuers.set(key, n);
    }
    return n;
  }
}

function issuerKey(tag: string, f: Required<DailyNumberFormat>): string {
  return `${tag}\n${f.timeZone}\n${f.digits}\n${f.check}`;
}
