/**
 * A keyed, reversible permutation of [0, size) for turning sequential IDs into
 * fixed-length, unrelated-looking numbers (order numbers) that stay unique and
 * decode back with the key.
 *
 * Construction: a balanced Feistel network over an even working width E (two
 * halves of h = E/2 ≤ 32 bits, so each round is 32-bit integer arithmetic on
 * doubles: no BigInt per round), `rounds` rounds (default 10, at least 8).
 * Round i maps (L, R) → (R, L xor F(R, k1[i], k2[i]) mod 2^h), where F is a
 * Math.imul-based integer hash (lowbias32-style) keyed by two 32-bit round
 * keys. Round keys come from HMAC-SHA256(secret, label) once, at construction.
 *
 * Domain: `size` = `max` when given, else 2^bits. E is the smallest even
 * width with 2^E ≥ size (so odd widths work), and values are cycle-walked
 * (Black & Rogaway): re-encrypt while the result is ≥ size. Because the
 * Feistel network is a bijection of [0, 2^E), walking gives a bijection of
 * [0, size); 2^E < 4·size, so a walk takes under 4 steps on average.
 *
 * WHAT IT IS NOT: it hides volume and order (a competitor cannot count your
 * orders from two order numbers) but it is not encryption in the cryptographic
 * sense and not access control. The round function is fast, not a vetted
 * PRF; anyone holding many (id, number) pairs may learn about the key. Never
 * use a permuted number as a secret or an authorization token.
 */
import type { createHmac as CreateHmac } from 'node:crypto';
import { InvalidArgumentError } from '../errors.js';

export interface FeistelOptions {
  /** Width of the output space in bits, 2..64. */
  bits: number;
  /** The secret: a string (UTF-8) or bytes, at least 16 bytes. */
  key: string | Uint8Array;
  /** Feistel rounds, 8..64. Default 8: as many as FF3 uses; every round mixes a full half with three multiplies. */
  rounds?: number;
  /**
   * Domain size: values below `max` map to values below `max` (cycle-walking).
   * 2..2^bits. Default 2^bits.
   */
  max?: bigint | number;
}

export const MIN_KEY_BYTES = 16;

function roundFunction(x: number, a: number, b: number): number {
  let z = x ^ a;
  z = Math.imul(z ^ (z >>> 16), 0x7feb352d);
  z = Math.imul(z ^ (z >>> 15), 0x846ca68b);
  z = Math.imul(z ^ (z >>> 16) ^ b, 0x9e3779b1);
  return z ^ (z >>> 15);
}

export class FeistelPermutation {
  /** Declared width of the output space. */
  readonly bits: number;
  /** Domain size: inputs and outputs are in [0, size). */
  readonly size: bigint;
  readonly rounds: number;
  /** Working width (even) and half width. */
  private readonly half: number;
  private readonly halfMask: number;
  private readonly halfScale: number;
  private readonly halfBig: bigint;
  private readonly halfMaskBig: bigint;
  /** Round keys: k[2i], k[2i+1] for round i. */
  private readonly keys: Int32Array;
  /** Largest value in the domain, as halves; `walk` false when size = 2^E. */
  private readonly walk: boolean;
  private readonly lastL: number;
  private readonly lastR: number;
  /** size ≤ 2^53: number methods allowed. */
  private readonly numberSafe: boolean;
  private readonly sizeNumber: number;
  /** Outputs of the last permute step (halves). */
  private l = 0;
  private r = 0;
  /**
   * Low-level result of `encryptParts`/`decryptParts`: the value as
   * `partHi * 2^32 + partLo` (unsigned 32-bit each). For allocation-free
   * encoders (e.g. `encodeCrockford32Parts`).
   */
  partHi = 0;
  partLo = 0;

  constructor(options: FeistelOptions) {
    const { bits, key, rounds = 8, max } = options;
    if (!Number.isInteger(bits) || bits < 2 || bits > 64) throw new InvalidArgumentError('bits must be an integer from 2 to 64');
    if (!Number.isInteger(rounds) || rounds < 8 || rounds > 64) {
      throw new InvalidArgumentError('rounds must be an integer from 8 to 64');
    }
    const keyBytes = typeof key === 'string' ? new TextEncoder().encode(key) : key;
    if (!(keyBytes instanceof Uint8Array) || keyBytes.length < MIN_KEY_BYTES) {
      throw new InvalidArgumentError(`key must be at least ${MIN_KEY_BYTES} bytes`);
    }
    let size = 1n << BigInt(bits);
    if (max !== undefined) {
      const m = typeof max === 'bigint' ? max : Number.isSafeInteger(max) ? BigInt(max) : -1n;
      if (m < 2n || m > size) throw new InvalidArgumentError(`max must be an integer from 2 to 2^${bits}`);
      size = m;
    }
    this.bits = bits;
    this.size = size;
    this.rounds = rounds;
    const needed = Math.max(2, (size - 1n).toString(2).length);
    const width = needed + (needed & 1);
    this.half = width / 2;
    this.halfScale = 2 ** this.half;
    this.halfMask = this.half === 32 ? 0xffffffff : (1 << this.half) - 1;
    this.halfBig = BigInt(this.half);
    this.halfMaskBig = (1n << this.halfBig) - 1n;
    this.walk = size !== 1n << BigInt(width);
    const last = size - 1n;
    this.lastL = Number(last >> this.halfBig);
    this.lastR = Number(last & this.halfMaskBig);
    this.numberSafe = size <= 1n << 53n;
    this.sizeNumber = Number(size);

    const keys = new Int32Array(2 * rounds);
    // node:crypto loads with the first permutation, not with `import 'sequoia-id'`; asking for a built-in this way
    // (Node 20.16+, package.json engines) spares the library's import node:module's createRequire (about 1 ms).
    const { createHmac } = process.getBuiltinModule('node:crypto') as { createHmac: typeof CreateHmac };
    for (let block = 0; 8 * block < keys.length; block++) {
      const digest = createHmac('sha256', keyBytes).update(`sequoia/feistel/v1/w${width}/r${rounds}/b${block}`).digest();
      for (let j = 0; j < 8 && 8 * block + j < keys.length; j++) keys[8 * block + j] = digest.readInt32BE(4 * j);
    }
    this.keys = keys;
  }

  private forward(l: number, r: number): void {
    const k = this.keys;
    const m = this.halfMask;
    for (let i = 0; i < k.length; i += 2) {
      const t = (l ^ roundFunction(r, k[i]!, k[i + 1]!)) & m;
      l = r;
      r = t >>> 0;
    }
    this.l = l;
    this.r = r;
  }

  private backward(l: number, r: number): void {
    const k = this.keys;
    const m = this.halfMask;
    for (let i = k.length - 2; i >= 0; i -= 2) {
      const t = (r ^ roundFunction(l, k[i]!, k[i + 1]!)) & m;
      r = l;
      l = t >>> 0;
    }
    this.l = l;
    this.r = r;
  }

  private outside(): boolean {
    return this.l > this.lastL || (this.l === this.lastL && this.r > this.lastR);
  }

  /** Splits an input into halves; throws unless 0 ≤ x < size. */
  private load(x: number | bigint): void {
    let hi: number;
    let lo: number;
    if (typeof x === 'number') {
      if (!Number.isSafeInteger(x) || x < 0 || (this.numberSafe && x >= this.sizeNumber)) {
        throw new InvalidArgumentError(`value must be an integer from 0 to ${this.size - 1n}`);
      }
      lo = x >>> 0; // x mod 2^32, exact for safe integers
      hi = (x - lo) / 4294967296;
    } else {
      if (typeof x !== 'bigint' || x < 0n || x >= this.size) {
        throw new InvalidArgumentError(`value must be an integer from 0 to ${this.size - 1n}`);
      }
      lo = Number(x & 0xffffffffn);
      hi = Number(x >> 32n);
    }
    // value = hi·2^32 + lo < 2^E = 2^(2h): split into h-bit halves.
    if (this.half === 32) {
      this.l = hi;
      this.r = lo;
    } else {
      this.l = ((hi << (32 - this.half)) | (lo >>> this.half)) >>> 0;
      this.r = (lo & this.halfMask) >>> 0;
    }
  }

  private storeParts(): void {
    const h = this.half;
    if (h === 32) {
      this.partHi = this.l;
      this.partLo = this.r;
    } else {
      this.partLo = (this.r | (this.l << h)) >>> 0;
      this.partHi = this.l >>> (32 - h);
    }
  }

  private encryptLoaded(): void {
    this.forward(this.l, this.r);
    if (this.walk) while (this.outside()) this.forward(this.l, this.r);
  }

  private decryptLoaded(): void {
    this.backward(this.l, this.r);
    if (this.walk) while (this.outside()) this.backward(this.l, this.r);
  }

  /** Low-level, allocation-free: encrypts `x` and leaves the result in `partHi`/`partLo`. */
  encryptParts(x: number | bigint): void {
    this.load(x);
    this.encryptLoaded();
    this.storeParts();
  }

  /** Low-level, allocation-free: decrypts `y` and leaves the result in `partHi`/`partLo`. */
  decryptParts(y: number | bigint): void {
    this.load(y);
    this.decryptLoaded();
    this.storeParts();
  }

  private resultBig(): bigint {
    return (BigInt(this.l) << this.halfBig) | BigInt(this.r);
  }

  /**
   * @example
   * const p = new FeistelPermutation({ bits: 40, key: 'a secret of 16+ bytes' });
   * p.decrypt(p.encrypt(42n)) === 42n
   */
  encrypt(x: bigint | number): bigint {
    this.load(x);
    this.encryptLoaded();
    return this.resultBig();
  }

  decrypt(y: bigint | number): bigint {
    this.load(y);
    this.decryptLoaded();
    return this.resultBig();
  }

  /** Number in, number out; only when size ≤ 2^53 (throws INVALID_ARGUMENT otherwise). */
  encryptNumber(x: number): number {
    if (!this.numberSafe) throw new InvalidArgumentError('encryptNumber needs a domain of at most 2^53; use encrypt');
    this.load(x);
    this.encryptLoaded();
    return this.l * this.halfScale + this.r;
  }

  decryptNumber(y: number): number {
    if (!this.numberSafe) throw new InvalidArgumentError('decryptNumber needs a domain of at most 2^53; use decrypt');
    this.load(y);
    this.decryptLoaded();
    return this.l * this.halfScale + this.r;
  }
}
