/** Input rules shared by the server, the CLI and the stores. */
import { InvalidArgumentError } from './errors.js';
import { MAX_ID, parseDecimalId } from './id.js';
import { TAG_RULE, isValidTag } from './tag.js';

export { TAG_PATTERN } from './tag.js';
/** Steps are stored as 32-bit integers in every backend. */
export const MAX_STORED_STEP = 2_000_000_000;

export function assertTag(tag: unknown, field = 'tag'): string {
  if (!isValidTag(tag)) {
    throw new InvalidArgumentError(`${field} ${TAG_RULE}`);
  }
  return tag;
}

export function assertStep(step: unknown, field = 'step'): number {
  if (typeof step !== 'number' || !Number.isSafeInteger(step) || step < 1 || step > MAX_STORED_STEP) {
    throw new InvalidArgumentError(`${field} must be an integer from 1 to ${MAX_STORED_STEP}`);
  }
  return step;
}

/** Accepts a decimal string (or a safe integer number) and returns a bigint in [0, 2^63-1]. */
export function assertIdValue(value: unknown, field: string): bigint {
  let v: bigint | undefined;
  if (typeof value === 'string') v = parseDecimalId(value);
  else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) v = BigInt(value);
  else if (typeof value === 'bigint' && value >= 0n && value <= MAX_ID) v = value;
  if (v === undefined) {
    throw new InvalidArgumentError(`${field} must be a decimal integer from 0 to 9223372036854775807`);
  }
  return v;
}

/**
 * The bytes APIs' one check: `bytes` is a Uint8Array holding `length` bytes
 * from `offset`, an integer. Without it a negative or fractional offset reads
 * `undefined` bytes and writes nothing (text such as "undefined0f5a…", an all-zero UUID).
 */
export function assertByteRange(bytes: unknown, offset: unknown, length: number, what: string): void {
  if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError(`${what}: bytes must be a Uint8Array`);
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0 || offset + length > bytes.length) {
    throw new InvalidArgumentError(
      `${what}: offset must be an integer from 0 to ${bytes.length - length} for ${length} bytes in a ${bytes.length}-byte array (got ${String(offset)})`,
    );
  }
}
