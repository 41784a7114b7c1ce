/**
 * Crockford Base32 (https://www.crockford.com/base32.html) for integers.
 *
 * Encode: symbols `0123456789ABCDEFGHJKMNPQRSTVWXYZ`, most significant first,
 * optionally left-padded to a fixed width, optionally followed by a check
 * symbol: value mod 37 indexed into `0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U`.
 * Decode: case-insensitive, `I`/`L` read as 1 and `O` as 0, hyphens ignored.
 *
 * `encodeCrockford32Parts` is the allocation-free hot path used by business
 * numbers: it takes the value as two unsigned 32-bit halves, no BigInt.
 */
import { InvalidArgumentError } from '../errors.js';
import { checkEncodable, padToWidth } from './integer-text.js';

export const CROCKFORD32_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const CROCKFORD32_CHECK_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U';
const SYMBOLS: readonly string[] = CROCKFORD32_ALPHABET.split('');
const CHECK_SYMBOLS: readonly string[] = CROCKFORD32_CHECK_ALPHABET.split('');
/** `SYMBOL_PAIRS[v]` is the two symbols of a 10-bit value; built by the first encoding, not at import (1,024 strings). */
let SYMBOL_PAIRS: readonly string[] | undefined;

/** Symbol value for char codes < 128; -1 when not a data symbol. */
const VALUE = new Int8Array(128).fill(-1);
/** Check-symbol value (0..36); -1 when not one. */
const CHECK_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 37; i++) {
  const ch = CROCKFORD32_CHECK_ALPHABET[i]!;
  for (const c of new Set([ch, ch.toLowerCase()])) {
    if (i < 32) VALUE[c.charCodeAt(0)] = i;
    CHECK_VALUE[c.charCodeAt(0)] = i;
  }
}
for (const [alias, v] of [
  ['I', 1],
  ['i', 1],
  ['L', 1],
  ['l', 1],
  ['O', 0],
  ['o', 0],
] as const) {
  VALUE[alias.charCodeAt(0)] = v;
  CHECK_VALUE[alias.charCodeAt(0)] = v;
}

/** Value of a Crockford data symbol at `text[index]` (aliases and lowercase accepted), or -1. */
export function crockford32ValueAt(text: string, index: number): number {
  const c = text.charCodeAt(index);
  return c < 128 ? VALUE[c]! : -1;
}

const MAX_TEXT = 1024;

export interface Crockford32Options {
  /** Left-pad with `0` to exactly this many data symbols; throw when the value needs more. Default: no padding. */
  width?: number;
  /** Append (encode) / require and verify (decode) the mod-37 check symbol. Default false. */
  check?: boolean;
}

/** The check symbol of a value (mod 37). */
export function crockford32CheckSymbol(value: bigint | number): string {
  const m = typeof value === 'bigint' ? Number(value % 37n) : value % 37;
  return CHECK_SYMBOLS[m]!;
}

/**
 * Encodes the 64-bit value `hi * 2^32 + lo` (both unsigned 32-bit) into exactly
 * `width` symbols (1..13), plus the check symbol when `check`. Bits above
 * `5 * width` must be zero; the caller guarantees it (no check on this path).
 */
export function encodeCrockford32Parts(hi: number, lo: number, width: number, check: boolean): string {
  // (hi·2^32 + lo) mod 37 from 16-bit pieces (2^16 ≡ 9, 2^32 ≡ 7, 2^48 ≡ 26 mod 37): small-integer arithmetic only.
  let s = check ? CHECK_SYMBOLS[((hi >>> 16) * 26 + (hi & 0xffff) * 7 + (lo >>> 16) * 9 + (lo & 0xffff)) % 37]! : '';
  let i = width;
  const pairs = (SYMBOL_PAIRS ??= Array.from({ length: 1024 }, (_, v) => SYMBOLS[v >>> 5]! + SYMBOLS[v & 31]!));
  // Two symbols (10 bits) per step: half the string concatenations.
  for (; i >= 2; i -= 2) {
    s = pairs[lo & 1023]! + s;
    lo = ((lo >>> 10) | (hi << 22)) >>> 0;
    hi >>>= 10;
  }
  return i === 1 ? SYMBOLS[lo & 31]! + s : s;
}

/**
 * Encodes a non-negative integer.
 * @example encodeCrockford32(1234n) === '16J'; encodeCrockford32(1234, { width: 6, check: true }) === '00016JD'
 */
export function encodeCrockford32(value: bigint | number, options: Crockford32Options = {}): string {
  checkEncodable(value);
  const v = typeof value === 'number' ? BigInt(value) : value;
  let s = '';
  let rest = v;
  do {
    s = SYMBOLS[Number(rest & 31n)]! + s;
    rest >>= 5n;
  } while (rest > 0n);
  const { width, check = false } = options;
  s = padToWidth(s, width, 'base32 symbols');
  return check ? s + CHECK_SYMBOLS[Number(v % 37n)]! : s;
}

/**
 * Decodes Crockford Base32 text to a bigint. Case-insensitive; I/L→1, O→0;
 * hyphens are ignored. With `check`, the last symbol is the check symbol and
 * must match. With `width`, the number of data symbols must equal it.
 * Throws INVALID_ARGUMENT otherwise.
 */
export function decodeCrockford32(text: string, options: Crockford32Options = {}): bigint {
  if (typeof text !== 'string' || text.length > MAX_TEXT) {
    throw new InvalidArgumentError(`base32 text must be a string of at most ${MAX_TEXT} characters`);
  }
  const { width, check = false } = options;
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 45) end--; // trailing hyphens
  let checkValue = -1;
  if (check) {
    if (end === 0) throw new InvalidArgumentError('base32 text is missing its check symbol');
    const c = text.charCodeAt(end - 1);
    checkValue = c < 128 ? CHECK_VALUE[c]! : -1;
    if (checkValue < 0) throw new InvalidArgumentError(`invalid check symbol ${JSON.stringify(text[end - 1])}`);
    end--;
  }
  let v = 0n;
  let acc = 0;
  let accSymbols = 0;
  let symbols = 0;
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 45) continue;
    const d = crockford32ValueAt(text, i);
    if (d < 0) throw new InvalidArgumentError(`invalid base32 symbol ${JSON.stringify(text[i])} at ${i}`);
    acc = acc * 32 + d;
    symbols++;
    if (++accSymbols === 10) {
      v = (v << 50n) | BigInt(acc);
      acc = 0;
      accSymbols = 0;
    }
  }
  if (symbols === 0) throw new InvalidArgumentError('base32 text has no symbols');
  if (width !== undefined && symbols !== width) {
    throw new InvalidArgumentError(`base32 text must have ${width} symbols${check ? ' plus a check symbol' : ''}, got ${symbols}`);
  }
  if (accSymbols > 0) v = (v << BigInt(5 * accSymbols)) | BigInt(acc);
  if (check && Number(v % 37n) !== checkValue) {
    throw new InvalidArgumentError('base32 check symbol does not match (mistyped number?)');
  }
  return v;
}
