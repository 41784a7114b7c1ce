/**
 * ULID text (https://github.com/ulid/spec) for 128-bit values: 26 Crockford
 * Base32 symbols, the first at most `7` (128 bits = 3 + 25×5). A ULID's first
 * 48 bits are Unix ms, exactly like a UUIDv7's, so a v7 written as a ULID
 * decodes (e.g. with the `ulid` package's `decodeTime`) to the same timestamp
 * and sorts in the same order. The conversion is the identity on the 128 bits,
 * as in `ulid`'s `uuidToULID`/`ulidToUUID`.
 */
import { assertByteRange } from '../validate.js';
import { InvalidArgumentError } from '../errors.js';
import { CROCKFORD32_ALPHABET, crockford32ValueAt } from '../codecs/crockford32.js';
import { formatUuid, parseUuid } from './uuid-text.js';

const SYMBOLS: readonly string[] = CROCKFORD32_ALPHABET.split('');

/** ULID text of 16 bytes (from `offset`). */
export function bytesToUlid(bytes: Uint8Array, offset = 0): string {
  assertByteRange(bytes, offset, 16, 'bytesToUlid');
  let s = '';
  let acc = 0;
  let bits = 0;
  for (let i = offset + 15; i >= offset; i--) {
    acc |= bytes[i]! << bits;
    bits += 8;
    while (bits >= 5) {
      s = SYMBOLS[acc & 31]! + s;
      acc >>>= 5;
      bits -= 5;
    }
  }
  return SYMBOLS[acc]! + s; // the 3 top bits
}

/** Decodes ULID text (case-insensitive, I/L→1, O→0) to its 16 bytes. Throws INVALID_ARGUMENT. */
export function ulidToBytes(text: string): Uint8Array {
  if (typeof text !== 'string' || text.length !== 26) throw new InvalidArgumentError('a ULID is 26 Crockford Base32 symbols');
  const out = new Uint8Array(16);
  let acc = 0;
  let bits = 0;
  let j = 15;
  for (let i = 25; i >= 0; i--) {
    const v = crockford32ValueAt(text, i);
    if (v < 0) throw new InvalidArgumentError(`invalid ULID symbol ${JSON.stringify(text[i])} at ${i}`);
    acc |= v << bits;
    bits += 5;
    if (bits >= 8) {
      out[j--] = acc & 255;
      acc >>>= 8;
      bits -= 8;
    }
  }
  if (acc !== 0) throw new InvalidArgumentError('ULID out of range (the first symbol must be 0-7)');
  return out;
}

/** ULID text of a UUID given as text (any form `parseUuid` accepts) or bytes. */
export function uuidToUlid(uuid: string | Uint8Array): string {
  return bytesToUlid(typeof uuid === 'string' ? parseUuid(uuid).bytes : uuid);
}

/** Canonical UUID text of a ULID (same 128 bits). */
export function ulidToUuid(ulid: string): string {
  return formatUuid(ulidToBytes(ulid));
}

/** The 48-bit Unix-ms timestamp of a ULID. */
export function ulidTimestampMs(ulid: string): number {
  const b = ulidToBytes(ulid);
  let ms = 0;
  for (let i = 0; i < 6; i++) ms = ms * 256 + b[i]!;
  return ms;
}
