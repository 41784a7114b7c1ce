/**
 * UUIDv7 (RFC 9562 §5.7), monotonic within one generator:
 *
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |                         unix_ts_ms (48)                       |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |          unix_ts_ms           |  ver=7|   rand_a = counter(12)|
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |var=10|                  rand_b (62, CSPRNG)                   |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * Monotonicity uses §6.2 Method 1 (fixed bit-length dedicated counter) in
 * rand_a: on each new millisecond the counter is re-seeded with random bits,
 * by default 11 of its 12 (top bit zero), so at least 2,048 increments remain
 * before it rolls over (§6.2: "counter rollover guards"). When it would roll
 * over, the generator borrows the next millisecond and re-seeds (§6.2 allows
 * "incrementing the timestamp ahead of the actual time"). When the clock goes
 * back, it keeps the last millisecond and keeps counting (§6.2: monotonicity
 * takes precedence over the exact time). So (unix_ts_ms, counter) rises
 * strictly on every call, and with it the bytes and the text.
 *
 * Randomness comes from the injected `Random`, drawn into a private pool of
 * `poolSize` bytes and consumed in 8-byte slices; text is built from a
 * precomputed hex table and a per-millisecond cached prefix, so a call does
 * one clock read and allocates only its result.
 */
import { assertByteRange } from '../validate.js';
import { ClockError, InvalidArgumentError, UnavailableError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Random } from '../random.js';
import { HEX_BYTES } from '../codecs/hex.js';
import { bytesToUlid } from './ulid.js';

export const UUID_V7_MAX_MS = 2 ** 48 - 1;

/**
 * `'7' + 3 hex digits` for every counter value: the version nibble and rand_a. Built by the first generator, not at
 * import: `import('sequoia-id')` need not pay for 4,096 strings before anyone asks for a UUIDv7 (BENCHMARKS.md, start-up).
 */
let VERSION_COUNTER: readonly string[] | undefined;
/** Byte 8 with the variant bits `10`: index by the random byte. Built by the first generator, as VERSION_COUNTER. */
let VARIANT_BYTE: readonly string[] | undefined;

export interface UuidV7Options {
  clock: Clock;
  random: Random;
  /**
   * Random bits the counter is seeded with on each new millisecond, 0..12.
   * Default 11 (top bit zero: ≥ 2,048 IDs per ms before borrowing the next
   * ms). 12 gives the most randomness (and reproduces RFC 9562 Appendix A.6);
   * 0 starts every ms at zero.
   */
  counterSeedBits?: number;
  /** Bytes drawn from `random` at a time. Default 8192. */
  poolSize?: number;
}

export class UuidV7Generator {
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly seedMask: number;
  private readonly pool: Uint8Array;
  private pos: number;
  /** Last issued ms; -1 before the first ID. */
  private ms = -1;
  private counter = 0;
  /** `xxxxxxxx-xxxx-` for `ms`. */
  private prefix = '';
  private readonly scratch = new Uint8Array(16);

  constructor(options: UuidV7Options) {
    const { clock, random, counterSeedBits = 11, poolSize = 8192 } = options;
    if (!Number.isInteger(counterSeedBits) || counterSeedBits < 0 || counterSeedBits > 12) {
      throw new InvalidArgumentError('counterSeedBits must be an integer from 0 to 12');
    }
    if (!Number.isInteger(poolSize) || poolSize < 16 || poolSize > 1 << 20) {
      throw new InvalidArgumentError('poolSize must be an integer from 16 to 1048576');
    }
    this.clock = clock;
    this.random = random;
    this.seedMask = (1 << counterSeedBits) - 1;
    VERSION_COUNTER ??= Array.from({ length: 4096 }, (_, i) => '7' + i.toString(16).padStart(3, '0'));
    VARIANT_BYTE ??= Array.from({ length: 256 }, (_, i) => HEX_BYTES[0x80 | (i & 0x3f)]!);
    this.pool = new Uint8Array(poolSize);
    this.pos = poolSize;
  }

  /** Index of `n` fresh pool bytes. */
  private take(n: number): number {
    const i = this.pos;
    if (i + n <= this.pool.length) {
      this.pos = i + n;
      return i;
    }
    this.random.fill(this.pool);
    this.pos = n;
    return 0;
  }

  private setMs(ms: number): void {
    if (ms > UUID_V7_MAX_MS) throw new UnavailableError('ID_SPACE_EXHAUSTED', 'UUIDv7 timestamp past 2^48-1 ms');
    const hi = Math.floor(ms / 0x1000000);
    const lo = ms - hi * 0x1000000;
    const h = HEX_BYTES;
    this.ms = ms;
    this.prefix = h[hi >>> 16]! + h[(hi >>> 8) & 255]! + h[hi & 255]! + h[lo >>> 16]! + '-' + h[(lo >>> 8) & 255]! + h[lo & 255]! + '-';
    const i = this.take(2);
    this.counter = ((this.pool[i]! << 8) | this.pool[i + 1]!) & this.seedMask;
  }

  /** Moves (ms, counter) strictly forward. */
  private advance(): void {
    const now = Math.floor(this.clock.now());
    if (now > this.ms) {
      this.setMs(now);
    } else if (this.ms < 0) {
      throw new ClockError(`clock returned ${now}, not a time since 1970`);
    } else if (this.counter < 0xfff) {
      this.counter++;
    } else {
      this.setMs(this.ms + 1); // counter rollover: borrow the next ms (RFC 9562 §6.2)
    }
  }

  /** The next UUIDv7 as lowercase hyphenated text. */
  next(): string {
    this.advance();
    const i = this.take(8);
    const p = this.pool;
    const h = HEX_BYTES;
    return (
      this.prefix +
      VERSION_COUNTER![this.counter]! +
      '-' +
      VARIANT_BYTE![p[i]!]! +
      h[p[i + 1]!]! +
      '-' +
      h[p[i + 2]!]! +
      h[p[i + 3]!]! +
      h[p[i + 4]!]! +
      h[p[i + 5]!]! +
      h[p[i + 6]!]! +
      h[p[i + 7]!]!
    );
  }

  /** The next UUIDv7 as 16 bytes, written into `out` at `offset` (a new array by default). */
  nextBytes(out: Uint8Array = new Uint8Array(16), offset = 0): Uint8Array {
    assertByteRange(out, offset, 16, 'nextBytes');
    this.advance();
    const ms = this.ms;
    const hi = Math.floor(ms / 0x1000000);
    const lo = ms - hi * 0x1000000;
    out[offset] = hi >>> 16;
    out[offset + 1] = hi >>> 8;
    out[offset + 2] = hi;
    out[offset + 3] = lo >>> 16;
    out[offset + 4] = lo >>> 8;
    out[offset + 5] = lo;
    out[offset + 6] = 0x70 | (this.counter >>> 8);
    out[offset + 7] = this.counter;
    const i = this.take(8);
    const p = this.pool;
    out[offset + 8] = 0x80 | (p[i]! & 0x3f);
    for (let k = 1; k < 8; k++) out[offset + 8 + k] = p[i + k]!;
    return out;
  }

  /** The next UUIDv7 in ULID text form (26 Crockford Base32 symbols; same order and timestamp). */
  nextUlid(): string {
    return bytesToUlid(this.nextBytes(this.scratch));
  }
}
