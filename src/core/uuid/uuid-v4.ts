/**
 * UUIDv4 (RFC 9562 §5.4): 122 random bits, version 4, variant 10. Random bytes
 * come from the injected `Random` into a private pool consumed 16 bytes per ID.
 */
import { assertByteRange } from '../validate.js';
import { InvalidArgumentError } from '../errors.js';
import type { Random } from '../random.js';
import { HEX_BYTES } from '../codecs/hex.js';

/** Bytes 6 and 8 with the version and variant bits: built by the first generator, not at `import('sequoia-id')`. */
let VERSION_BYTE: readonly string[] | undefined;
let VARIANT_BYTE: readonly string[] | undefined;

export interface UuidV4Options {
  random: Random;
  /** Bytes drawn from `random` at a time. Default 8192. */
  poolSize?: number;
}

export class UuidV4Generator {
  private readonly random: Random;
  private readonly pool: Uint8Array;
  private pos: number;

  constructor(options: UuidV4Options) {
    const { random, poolSize = 8192 } = options;
    if (!Number.isInteger(poolSize) || poolSize < 16 || poolSize > 1 << 20) {
      throw new InvalidArgumentError('poolSize must be an integer from 16 to 1048576');
    }
    this.random = random;
    this.pool = new Uint8Array(poolSize);
    VERSION_BYTE ??= Array.from({ length: 256 }, (_, i) => HEX_BYTES[0x40 | (i & 0x0f)]!);
    VARIANT_BYTE ??= Array.from({ length: 256 }, (_, i) => HEX_BYTES[0x80 | (i & 0x3f)]!);
    this.pos = poolSize;
  }

  private take(): number {
    const i = this.pos;
    if (i + 16 <= this.pool.length) {
      this.pos = i + 16;
      return i;
    }
    this.random.fill(this.pool);
    this.pos = 16;
    return 0;
  }

  /** The next UUIDv4 as lowercase hyphenated text. */
  next(): string {
    const i = this.take();
    const p = this.pool;
    const h = HEX_BYTES;
    return (
      h[p[i]!]! +
      h[p[i + 1]!]! +
      h[p[i + 2]!]! +
      h[p[i + 3]!]! +
      '-' +
      h[p[i + 4]!]! +
      h[p[i + 5]!]! +
      '-' +
      VERSION_BYTE![p[i + 6]!]! +
      h[p[i + 7]!]! +
      '-' +
      VARIANT_BYTE![p[i + 8]!]! +
      h[p[i + 9]!]! +
      '-' +
      h[p[i + 10]!]! +
      h[p[i + 11]!]! +
      h[p[i + 12]!]! +
      h[p[i + 13]!]! +
      h[p[i + 14]!]! +
      h[p[i + 15]!]!
    );
  }

  /** The next UUIDv4 as 16 bytes, written into `out` at `offset` (a new array by default). */
  nextBytes(out: Uint8Array = new Uint8Array(16), offset = 0): Uint8Array {
    assertByteRange(out, offset, 16, 'nextBytes');
    const i = this.take();
    const p = this.pool;
    for (let k = 0; k < 16; k++) out[offset + k] = p[i + k]!;
    out[offset + 6] = 0x40 | (out[offset + 6]! & 0x0f);
    out[offset + 8] = 0x80 | (out[offset + 8]! & 0x3f);
    return out;
  }
}
