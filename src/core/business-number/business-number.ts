/**
 * Business numbers: how an internal ID (a 63-bit segment or snowflake ID) is
 * shown to people, and read back. A format is plain data, so it can live in a
 * tag's configuration or a query string, and is validated once:
 *
 *   { kind: 'decimal' }                                  42 → "42"
 *   { kind: 'hex', width?: 1..16 }                       42 → "2a" / "000000000000002a"
 *   { kind: 'base62', width?: 1..11 }                    42 → "g"  / "00000g"
 *   { kind: 'crockford32', width?: 1..13, check?: false } 42 → "1A" / "0001A" (+ check symbol)
 *   { kind: 'permuted-base32', bits: 8..64, key: '≥16 chars', width?, check?: true, rounds?: 8, max? }
 *       42 → 12 unrelated-looking symbols + check (bits 60): keyed Feistel permutation of [0, 2^bits) (or
 *       [0, max)), then Crockford Base32 left-padded to `width` (default
 *       ceil(bits/5), at most 13), plus a mod-37 check symbol (default on).
 *
 * Use:
 *   const codec = createBusinessNumberCodec(validateBusinessNumberFormat(json)); // once
 *   codec.encode(id)     // string; id: number (safe) or bigint, 0..2^63-1
 *   codec.decode(text)   // bigint, for `sequoia explain` / `/v1/explain`
 *   resolveBusinessNumberFormat('base62:8' | 'order', tagFormats)  // a `?format=` value → format
 *
 * Errors: a malformed format or text, or an ID that is not an integer in
 * [0, 2^63-1], throws InvalidArgumentError (INVALID_ARGUMENT) naming the field.
 * An ID too large for the format (≥ `codec.limit`, e.g. ≥ 2^bits, or more
 * digits than `width`) throws UnavailableError('ID_SPACE_EXHAUSTED'): the
 * format's space is used up and it never wraps.
 *
 * The permuted format hides volume and order; it is not access control (see
 * FeistelPermutation). Changing `key`, `bits`, `rounds` or `max` changes every
 * number: treat them as fixed for the life of a tag.
 */
import { InvalidArgumentError, UnavailableError } from '../errors.js';
import { type Id, MAX_ID } from '../id.js';
import { decodeBase62, encodeBase62 } from '../codecs/base62.js';
import { decodeCrockford32, encodeCrockford32, encodeCrockford32Parts } from '../codecs/crockford32.js';
import { decodeDecimal } from '../codecs/decimal.js';
import { decodeHex, encodeHex } from '../codecs/hex.js';
import { FeistelPermutation, MIN_KEY_BYTES } from '../permutation/feistel-permutation.js';

export type BusinessNumberFormat =
  | { readonly kind: 'decimal' }
  | { readonly kind: 'hex'; readonly width?: number }
  | { readonly kind: 'base62'; readonly width?: number }
  | { readonly kind: 'crockford32'; readonly width?: number; readonly check?: boolean }
  | {
      readonly kind: 'permuted-base32';
      /** Permutation width, 8..64. */
      readonly bits: number;
      /** Secret, at least 16 bytes of UTF-8. */
      readonly key: string;
      /** Data symbols, ceil(bits/5)..13. Default ceil(bits/5). */
      readonly width?: number;
      /** Append a mod-37 check symbol. Default true. */
      readonly check?: boolean;
      /** Feistel rounds, 8..64. Default 8. */
      readonly rounds?: number;
      /** Domain size (decimal string or safe integer), 2..2^bits: IDs below it map below it. Default 2^bits. */
      readonly max?: string | number;
    };

export type BusinessNumberKind = BusinessNumberFormat['kind'];
export const BUSINESS_NUMBER_KINDS: readonly BusinessNumberKind[] = ['decimal', 'hex', 'base62', 'crockford32', 'permuted-base32'];

const FIELDS: Record<BusinessNumberKind, readonly string[]> = {
  decimal: ['kind'],
  hex: ['kind', 'width'],
  base62: ['kind', 'width'],
  crockford32: ['kind', 'width', 'check'],
  'permuted-base32': ['kind', 'bits', 'key', 'width', 'check', 'rounds', 'max'],
};

function intField(o: Record<string, unknown>, name: string, field: string, min: number, max: number): number | undefined {
  const v = o[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new InvalidArgumentError(`${field}.${name} must be an integer from ${min} to ${max}`);
  }
  return v;
}

function boolField(o: Record<string, unknown>, name: string, field: string): boolean | undefined {
  const v = o[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new InvalidArgumentError(`${field}.${name} must be true or false`);
  return v;
}

/**
 * Checks that `value` is a BusinessNumberFormat and returns a clean copy.
 * Throws InvalidArgumentError naming the first bad field (`format.bits …`).
 */
export function validateBusinessNumberFormat(value: unknown, field = 'format'): BusinessNumberFormat {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${field} must be an object with a "kind"`);
  }
  const o = value as Record<string, unknown>;
  const kind = o['kind'];
  if (typeof kind !== 'string' || !Object.hasOwn(FIELDS, kind)) {
    throw new InvalidArgumentError(`${field}.kind must be one of ${BUSINESS_NUMBER_KINDS.join(', ')}`);
  }
  const k = kind as BusinessNumberKind;
  for (const name of Object.keys(o)) {
    if (!FIELDS[k].includes(name)) throw new InvalidArgumentError(`${field}.${name} is not a field of kind ${k}`);
  }
  switch (k) {
    case 'decimal':
      return { kind: k };
    case 'hex': {
      const width = intField(o, 'width', field, 1, 16);
      return width === undefined ? { kind: k } : { kind: k, width };
    }
    case 'base62': {
      const width = intField(o, 'width', field, 1, 11);
      return width === undefined ? { kind: k } : { kind: k, width };
    }
    case 'crockford32': {
      const width = intField(o, 'width', field, 1, 13);
      const check = boolField(o, 'check', field);
      return { kind: k, ...(width === undefined ? {} : { width }), ...(check === undefined ? {} : { check }) };
    }
    case 'permuted-base32': {
      const bits = intField(o, 'bits', field, 8, 64);
      if (bits === undefined) throw new InvalidArgumentError(`${field}.bits is required (8 to 64)`);
      const key = o['key'];
      if (typeof key !== 'string' || new TextEncoder().encode(key).length < MIN_KEY_BYTES) {
        throw new InvalidArgumentError(`${field}.key must be a secret string of at least ${MIN_KEY_BYTES} bytes`);
      }
      const minWidth = Math.ceil(bits / 5);
      const width = intField(o, 'width', field, minWidth, 13);
      const check = boolField(o, 'check', field);
      const rounds = intField(o, 'rounds', field, 8, 64);
      const maxRaw = o['max'];
      let max: string | undefined;
      if (maxRaw !== undefined) {
        const m =
          typeof maxRaw === 'string' && /^[1-9][0-9]{0,19}$/.test(maxRaw)
            ? BigInt(maxRaw)
            : typeof maxRaw === 'number' && Number.isSafeInteger(maxRaw)
              ? BigInt(maxRaw)
              : -1n;
        if (m < 2n || m > 1n << BigInt(bits)) {
          throw new InvalidArgumentError(`${field}.max must be a decimal integer from 2 to 2^${bits}`);
        }
        max = m.toString();
      }
      return {
        kind: k,
        bits,
        key,
        ...(width === undefined ? {} : { width }),
        ...(check === undefined ? {} : { check }),
        ...(rounds === undefined ? {} : { rounds }),
        ...(max === undefined ? {} : { max }),
      };
    }
  }
}

export interface BusinessNumberCodec {
  readonly format: BusinessNumberFormat;
  /** IDs in [0, limit) can be encoded. */
  readonly limit: bigint;
  /** ID → text. Throws INVALID_ARGUMENT for a non-ID, ID_SPACE_EXHAUSTED for an ID ≥ limit. */
  encode(id: Id): string;
  /** Text → ID (bigint). Throws INVALID_ARGUMENT when the text is not a number of this format. */
  decode(text: string): bigint;
}

const ID_LIMIT = MAX_ID + 1n;

function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** Checks an ID and its fit; returns it as given. */
function checkId(id: Id, limit: bigint, limitNumber: number): Id {
  if (typeof id === 'number') {
    if (!Number.isSafeInteger(id) || id < 0) throw new InvalidArgumentError('id must be an integer from 0 to 2^63-1');
    if (id >= limitNumber) throw exhausted(limit);
  } else {
    if (typeof id !== 'bigint' || id < 0n || id > MAX_ID) throw new InvalidArgumentError('id must be an integer from 0 to 2^63-1');
    if (id >= limit) throw exhausted(limit);
  }
  return id;
}

function exhausted(limit: bigint): UnavailableError {
  return new UnavailableError('ID_SPACE_EXHAUSTED', `id does not fit this business-number format (must be below ${limit})`);
}

function checkDecoded(v: bigint, limit: bigint): bigint {
  if (v >= limit) throw new InvalidArgumentError('number is out of range for this format');
  return v;
}

/**
 * A positional notation in `radix`: IDs below radix^width (every ID without a
 * width), checked on the way in and out of `encode` and `decode` (each given
 * the width).
 */
function positional(
  format: BusinessNumberFormat,
  radix: bigint,
  width: number | undefined,
  encode: (id: Id, width: number | undefined) => string,
  decode: (text: string, width: number | undefined) => bigint,
): BusinessNumberCodec {
  const limit = width === undefined ? ID_LIMIT : minBig(ID_LIMIT, radix ** BigInt(width));
  const limitNumber = Number(limit);
  return {
    format,
    limit,
    encode: (id) => encode(checkId(id, limit, limitNumber), width),
    decode: (text) => checkDecoded(decode(text, width), limit),
  };
}

/**
 * Builds the encoder/decoder for a format (validates it first; do this once,
 * not per ID: the permuted kind derives its round keys here).
 * @example
 * const order = createBusinessNumberCodec({ kind: 'permuted-base32', bits: 60, key: process.env.ORDER_KEY!, width: 12 });
 * const text = order.encode(1000001);   // 12 symbols + check symbol
 * order.decode(text) === 1000001n
 */
export function createBusinessNumberCodec(input: BusinessNumberFormat): BusinessNumberCodec {
  const format = validateBusinessNumberFormat(input);
  switch (format.kind) {
    case 'decimal': {
      return {
        format,
        limit: ID_LIMIT,
        encode: (id) => String(checkId(id, ID_LIMIT, Infinity)),
        decode: (text) => decodeDecimal(text),
      };
    }
    case 'hex':
      return positional(format, 16n, format.width, encodeHex, decodeHex);
    case 'base62':
      return positional(format, 62n, format.width, encodeBase62, decodeBase62);
    case 'crockford32': {
      const { width, check = false } = format;
      return positional(
        format,
        32n,
        width,
        (id) => encodeCrockford32(id, { width, check }),
        (text) => decodeCrockford32(text, { width, check }),
      );
    }
    case 'permuted-base32': {
      const { bits, key, rounds, check = true } = format;
      const width = format.width ?? Math.ceil(bits / 5);
      const perm = new FeistelPermutation({ bits, key, rounds, max: format.max === undefined ? undefined : BigInt(format.max) });
      const limit = minBig(ID_LIMIT, perm.size);
      const limitNumber = Number(limit);
      return {
        format,
        limit,
        encode(id: Id): string {
          checkId(id, limit, limitNumber);
          perm.encryptParts(id);
          return encodeCrockford32Parts(perm.partHi, perm.partLo, width, check);
        },
        decode(text: string): bigint {
          const v = decodeCrockford32(text, { width, check });
          if (v >= perm.size) throw new InvalidArgumentError('number is out of range for this format');
          return checkDecoded(perm.decrypt(v), limit);
        },
      };
    }
  }
}

const SPEC = /^(decimal|hex|base62|crockford32)(?::([0-9]{1,2}))?(?::(check))?$/;

/**
 * Resolves a `?format=` value (or a CLI `--format`): first a name in `named`
 * (e.g. the tag's configured formats, such as `order` → a permuted-base32
 * format with its key), else a key-less kind with an optional width and, for
 * crockford32, `:check`: `decimal`, `hex`, `hex:16`, `base62`, `base62:11`,
 * `crockford32`, `crockford32:13`, `crockford32:13:check`. A permuted format
 * is only reachable by name (its key never travels in a URL).
 * Throws InvalidArgumentError naming `field`.
 */
export function resolveBusinessNumberFormat(
  spec: string,
  named?: ReadonlyMap<string, BusinessNumberFormat>,
  field = 'format',
): BusinessNumberFormat {
  if (typeof spec !== 'string') throw new InvalidArgumentError(`${field} must be a string`);
  const configured = named?.get(spec);
  if (configured !== undefined) return validateBusinessNumberFormat(configured, field);
  const m = SPEC.exec(spec);
  if (m === null || (m[3] !== undefined && m[1] !== 'crockford32') || (m[2] !== undefined && m[1] === 'decimal')) {
    const names = named === undefined || named.size === 0 ? '' : ` or one of ${[...named.keys()].join(', ')}`;
    throw new InvalidArgumentError(`${field} must be decimal, hex[:width], base62[:width] or crockford32[:width][:check]${names}`);
  }
  const kind = m[1] as 'decimal' | 'hex' | 'base62' | 'crockford32';
  const candidate: Record<string, unknown> = { kind };
  if (m[2] !== undefined) candidate['width'] = Number(m[2]);
  if (m[3] !== undefined) candidate['check'] = true;
  return validateBusinessNumberFormat(candidate, field);
}
