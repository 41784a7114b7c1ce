/** The rules every integer codec (hex, base62, Crockford Base32) applies the same way. */
import { InvalidArgumentError } from '../errors.js';

/** A value a codec encodes: a safe non-negative integer, or a non-negative bigint. */
export function checkEncodable(value: bigint | number): void {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError('value must be a non-negative integer');
  } else if (value < 0n) {
    throw new InvalidArgumentError('value must not be negative');
  }
}

/**
 * `text` left-padded with `0` to exactly `width` symbols (as it is without a
 * width); a value that needs more symbols is refused, naming them (`unit`).
 */
export function padToWidth(text: string, width: number | undefined, unit: string): string {
  if (width === undefined) return text;
  if (text.length > width) throw new InvalidArgumentError(`value needs ${text.length} ${unit}, more than width ${width}`);
  return text.padStart(width, '0');
}
