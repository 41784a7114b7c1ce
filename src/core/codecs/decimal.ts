/**
 * Decimal ID text. Decoding is strict (see `parseDecimalId`): digits only, no
 * sign, exponent, fraction, spaces or leading zeros, at most 2^63-1.
 */
import { InvalidArgumentError } from '../errors.js';
import { MAX_ID, parseDecimalId } from '../id.js';

export function encodeDecimal(value: bigint | number): string {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError('value must be a non-negative integer');
    return String(value);
  }
  if (value < 0n || value > MAX_ID) throw new InvalidArgumentError('value must be from 0 to 2^63-1');
  return value.toString();
}

export function decodeDecimal(text: string): bigint {
  const v = typeof text === 'string' ? parseDecimalId(text) : undefined;
  if (v === undefined) {
    throw new InvalidArgumentError(`${JSON.stringify(text)} is not a decimal ID (digits only, 0 to 9223372036854775807)`);
  }
  return v;
}
