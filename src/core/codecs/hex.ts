/**
 * Hexadecimal helpers. Text is lowercase on output and case-insensitive on
 * input; `0x` prefixes, signs and spaces are rejected.
 */
import { InvalidArgumentError } from '../errors.js';
import { padToWidth } from './integer-text.js';

/** `HEX_BYTES[b]` is the two lowercase hex digits of byte `b` (shared table for hot paths). */
export const HEX_BYTES: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Nibble value of a char code, or -1. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLE[65 + i] = 10 + i;
  NIBBLE[97 + i] = 10 + i;
}

/** Value of the hex digit at `text[index]`, or -1 when it is not one. */
export function hexDigitAt(text: string, index: number): number {
  const c = text.charCodeAt(index);
  return c < 128 ? NIBBLE[c]! : -1;
}

export function bytesToHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX_BYTES[bytes[i]!]!;
  return s;
}

/** Decodes an even-length hex string (any case). With `length`, the byte count must match. */
export function hexToBytes(text: string, length?: number): Uint8Array {
  if (typeof text !== 'string' || text.length % 2 !== 0) {
    throw new InvalidArgumentError('hex text must have an even number of digits');
  }
  if (length !== undefined && text.length !== length * 2) {
    throw new InvalidArgumentError(`hex text must be ${length * 2} digits`);
  }
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = hexDigitAt(text, 2 * i);
    const lo = hexDigitAt(text, 2 * i + 1);
    if (hi < 0 || lo < 0) throw new InvalidArgumentError(`invalid hex digit in ${JSON.stringify(text)}`);
    out[i] = (hi << 4) | lo;
  }
  return out;
}

function toBigInt(value: bigint | number, what: string): bigint {
  if (typeof value === 'bigint') {
    if (value < 0n) throw new InvalidArgumentError(`${what} must not be negative`);
    return value;
  }
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${what} must be a non-negative safe integer or a bigint`);
  }
  return BigInt(value);
}

/** Encodes a non-negative integer as lowercase hex, left-padded with zeros to `width` when given. */
export function encodeHex(value: bigint | number, width?: number): string {
  return padToWidth(toBigInt(value, 'value').toString(16), width, 'hex digits');
}

/** Decodes hex digits (any case, at least one) to a bigint. With `width`, the length must match. */
export function decodeHex(text: string, width?: number): bigint {
  if (typeof text !== 'string' || text.length === 0 || text.length > 1024) {
    throw new InvalidArgumentError('hex text must be 1 to 1024 hex digits');
  }
  if (width !== undefined && text.length !== width) throw new InvalidArgumentError(`hex text must be ${width} digits`);
  for (let i = 0; i < text.length; i++) {
    if (hexDigitAt(text, i) < 0) throw new InvalidArgumentError(`invalid hex digit in ${JSON.stringify(text)}`);
  }
  return BigInt('0x' + text);
}
