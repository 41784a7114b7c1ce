/**
 * MongoDB ObjectId (12 bytes, 24 hex digits):
 *
 *   | seconds since 1970 (4, big-endian) | process random (5) | counter (3, big-endian) |
 *
 * The 5 random bytes are drawn once per generator (one per process in
 * practice); the counter starts at a random value and wraps at 2^24, so one
 * generator yields 16,777,216 distinct IDs per second (as in the MongoDB spec
 * and the `bson` package). Seconds past 2^32-1 wrap, as in `bson`.
 */
import { assertByteRange } from '../validate.js';
import { InvalidArgumentError } from '../errors.js';
import type { Clock } from '../../ports/clock.js';
import type { Random } from '../../ports/random.js';
import { HEX_BYTES, hexToBytes } from '../codecs/hex.js';

export interface ObjectIdOptions {
  clock: Clock;
  random: Random;
}

export interface ParsedObjectId {
  readonly bytes: Uint8Array;
  /** Lowercase 24-hex text. */
  readonly text: string;
  /** Seconds since the Unix epoch (uint32). */
  readonly timestampSeconds: number;
  /** The 5-byte per-process random value as 10 hex digits. */
  readonly processUnique: string;
  readonly counter: number;
}

export class ObjectIdGenerator {
  private readonly clock: Clock;
  private readonly process = new Uint8Array(5);
  /** Hex of the 5 process bytes. */
  private readonly processHex: string;
  private counter: number;
  private lastSeconds = -1;
  private secondsHex = '';

  constructor(options: ObjectIdOptions) {
    this.clock = options.clock;
    const seed = new Uint8Array(8);
    options.random.fill(seed);
    this.process.set(seed.subarray(0, 5));
    this.processHex = Array.from(this.process, (b) => HEX_BYTES[b]!).join('');
    this.counter = (seed[5]! << 16) | (seed[6]! << 8) | seed[7]!;
  }

  private seconds(): number {
    const s = Math.floor(this.clock.now() / 1000) >>> 0;
    if (s !== this.lastSeconds) {
      this.lastSeconds = s;
      this.secondsHex = HEX_BYTES[s >>> 24]! + HEX_BYTES[(s >>> 16) & 255]! + HEX_BYTES[(s >>> 8) & 255]! + HEX_BYTES[s & 255]!;
    }
    return s;
  }

  private nextCounter(): number {
    const c = this.counter;
    this.counter = (c + 1) & 0xffffff;
    return c;
  }

  /** The next ObjectId as 24 lowercase hex digits. */
  next(): string {
    this.seconds();
    const c = this.nextCounter();
    return this.secondsHex + this.processHex + HEX_BYTES[c >>> 16]! + HEX_BYTES[(c >>> 8) & 255]! + HEX_BYTES[c & 255]!;
  }

  /** The next ObjectId as 12 bytes, written into `out` at `offset` (a new array by default). */
  nextBytes(out: Uint8Array = new Uint8Array(12), offset = 0): Uint8Array {
    assertByteRange(out, offset, 12, 'nextBytes');
    const s = this.seconds();
    const c = this.nextCounter();
    out[offset] = s >>> 24;
    out[offset + 1] = s >>> 16;
    out[offset + 2] = s >>> 8;
    out[offset + 3] = s;
    out.set(this.process, offset + 4);
    out[offset + 9] = c >>> 16;
    out[offset + 10] = c >>> 8;
    out[offset + 11] = c;
    return out;
  }
}

/** Lowercase 24-hex text of 12 bytes. */
export function formatObjectId(bytes: Uint8Array): string {
  if (bytes.length !== 12) throw new InvalidArgumentError('an ObjectId is 12 bytes');
  let s = '';
  for (let i = 0; i < 12; i++) s += HEX_BYTES[bytes[i]!]!;
  return s;
}

/** Parses 24 hex digits (any case) into an ObjectId's fields. Throws INVALID_ARGUMENT. */
export function parseObjectId(text: string): ParsedObjectId {
  if (typeof text !== 'string' || text.length !== 24) {
    throw new InvalidArgumentError('an ObjectId is 24 hex digits');
  }
  const bytes = hexToBytes(text, 12);
  const b = bytes;
  return {
    bytes,
    text: formatObjectId(bytes),
    timestampSeconds: ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0,
    processUnique: text.slice(8, 18).toLowerCase(),
    counter: (b[9]! << 16) | (b[10]! << 8) | b[11]!,
  };
}
