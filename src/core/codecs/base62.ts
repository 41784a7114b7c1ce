/**
 * Base62 with the alphabet `0-9A-Za-z` (ASCII order, so fixed-width codes sort
 * like the numbers they encode). Bigint-safe: any non-negative integer encodes.
 * Decoding rejects any other character with INVALID_ARGUMENT.
 */
import { InvalidArgumentError } from '../errors.js';
import { checkEncodable, padToWidth } from './integer-text.js';

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const DIGITS: readonly string[] = BASE62_ALPHABET.split('');
const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 62; i++) VALUE[BASE62_ALPHABET.charCodeAt(i)] = i;

/** 62^8 < 2^53: bigints are cut into chunks of 8 digits handled with doubles. */
const CHUNK = 62n ** 8n;
const CHUNK_DIGITS = 8;
const MAX_TEXT = 1024;

function encodeNumber(v: number): string {
  if (v === 0) return '0';
  let s = '';
  while (v > 0) {
    const d = v % 62;
    s = DIGITS[d]! + s;
    v = (v - d) / 62;
  }
  return s;
}

/**
 * Encodes a non-negative integer. With `width`, left-pads with `0` to exactly
 * `width` characters and throws when the value needs more.
 * @example encodeBase62(61n) === 'z'; encodeBase62(62, 4) === '0010'
 */
export function encodeBase62(value: bigint | number, width?: number): string {
  checkEncodable(value);
  let s: string;
  if (typeof value === 'number') {
    s = encodeNumber(value);
  } else if (value <= BigInt(Number.MAX_SAFE_INTEGER)) {
    s = encodeNumber(Number(value));
  } else {
    s = '';
    let v = value;
    while (v >= CHUNK) {
      const q = v / CHUNK;
      s = encodeNumber(Number(v - q * CHUNK)).padStart(CHUNK_DIGITS, '0') + s;
      v = q;
    }
    s = encodeNumber(Number(v)) + s;
  }
  return padToWidth(s, width, 'base62 digits');
}

/**
 * Decodes base62 text (case-sensitive). With `width`, the text must have exactly
 * that many characters. Throws INVALID_ARGUMENT on empty text or a foreign character.
 */
export function decodeBase62(text: string, width?: number): bigint {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_TEXT) {
    throw new InvalidArgumentError(`base62 text must be 1 to ${MAX_TEXT} characters`);
  }
  if (width !== undefined && text.length !== width) {
    throw new InvalidArgumentError(`base62 text must be ${width} characters`);
  }
  let result = 0n;
  let acc = 0;
  let accDigits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const d = c < 128 ? VALUE[c]! : -1;
    if (d < 0) throw new InvalidArgumentError(`invalid base62 character ${JSON.stringify(text[i])} at ${i}`);
    acc = acc * 62 + d;
    if (++accDigits === CHUNK_DIGITS) {
      result = result * CHUNK + BigInt(acc);
      acc = 0;
      accDigits = 0;
    }
  }
  return accDigits === 0 ? result : result * 62n ** BigInt(accDigits) + BigInt(acc);
}
