/**
 * UUID text and bytes (RFC 9562 §4). A UUID is 16 bytes; its canonical text is
 * 32 lowercase hex digits hyphenated 8-4-4-4-12. Parsing accepts upper or lower
 * case, the same text in braces (`{…}`, Microsoft style) and the URN form
 * (`urn:uuid:…`, RFC 9562 §4), and nothing else. The version is the high
 * nibble of byte 6; the variant the high bits of byte 8 (§4.1, §4.2).
 */
import { assertByteRange } from '../validate.js';
import { InvalidArgumentError } from '../errors.js';
import { HEX_BYTES, hexDigitAt } from '../codecs/hex.js';

export type UuidVariant = 'ncs' | 'rfc9562' | 'microsoft' | 'future';

export interface ParsedUuid {
  /** The 16 bytes, network order. */
  readonly bytes: Uint8Array;
  /** Bits 48–51 (0 for the nil UUID, 15 for the max UUID). */
  readonly version: number;
  readonly variant: UuidVariant;
  /** Canonical lowercase hyphenated text. */
  readonly text: string;
}

/** Canonical lowercase hyphenated text of 16 bytes (from `offset`). */
export function formatUuid(bytes: Uint8Array, offset = 0): string {
  assertByteRange(bytes, offset, 16, 'formatUuid');
  const h = HEX_BYTES;
  const b = bytes;
  const o = offset;
  return (
    h[b[o]!]! +
    h[b[o + 1]!]! +
    h[b[o + 2]!]! +
    h[b[o + 3]!]! +
    '-' +
    h[b[o + 4]!]! +
    h[b[o + 5]!]! +
    '-' +
    h[b[o + 6]!]! +
    h[b[o + 7]!]! +
    '-' +
    h[b[o + 8]!]! +
    h[b[o + 9]!]! +
    '-' +
    h[b[o + 10]!]! +
    h[b[o + 11]!]! +
    h[b[o + 12]!]! +
    h[b[o + 13]!]! +
    h[b[o + 14]!]! +
    h[b[o + 15]!]!
  );
}

export function uuidVariant(byte8: number): UuidVariant {
  if ((byte8 & 0x80) === 0) return 'ncs';
  if ((byte8 & 0xc0) === 0x80) return 'rfc9562';
  if ((byte8 & 0xe0) === 0xc0) return 'microsoft';
  return 'future';
}

/** Strips braces or the URN prefix; returns the 36-character core or undefined. */
function coreText(text: string): string | undefined {
  if (text.length === 36) return text;
  if (text.length === 38 && text.charCodeAt(0) === 123 && text.charCodeAt(37) === 125) return text.slice(1, 37);
  if (text.length === 45 && text.slice(0, 9).toLowerCase() === 'urn:uuid:') return text.slice(9);
  return undefined;
}

function decodeCore(core: string): Uint8Array | undefined {
  const out = new Uint8Array(16);
  let j = 0;
  for (let i = 0; i < 36;) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (core.charCodeAt(i) !== 45) return undefined;
      i++;
      continue;
    }
    const hi = hexDigitAt(core, i);
    const lo = hexDigitAt(core, i + 1);
    if (hi < 0 || lo < 0) return undefined;
    out[j++] = (hi << 4) | lo;
    i += 2;
  }
  return out;
}

/** Parses UUID text (any case; bare, `{braced}` or `urn:uuid:`); undefined when it is not one. */
export function tryParseUuid(text: string): ParsedUuid | undefined {
  if (typeof text !== 'string') return undefined;
  const core = coreText(text);
  if (core === undefined) return undefined;
  const bytes = decodeCore(core);
  if (bytes === undefined) return undefined;
  return { bytes, version: bytes[6]! >>> 4, variant: uuidVariant(bytes[8]!), text: formatUuid(bytes) };
}

/**
 * Parses UUID text. Throws INVALID_ARGUMENT when the text is not a UUID.
 * @example parseUuid('{017F22E2-79B0-7CC3-98C4-DC0C0C07398F}').version === 7
 */
export function parseUuid(text: string): ParsedUuid {
  const parsed = tryParseUuid(text);
  if (parsed === undefined) {
    throw new InvalidArgumentError(
      `${JSON.stringify(String(text).slice(0, 64))} is not a UUID (expected 8-4-4-4-12 hex digits, optionally in {} or after urn:uuid:)`,
    );
  }
  return parsed;
}

/**
 * True for the nil and max UUIDs and for RFC 9562 variant UUIDs of versions 1–8
 * (the same rule as the `uuid` package's `validate`), in any accepted text form.
 */
export function isValidUuid(text: string): boolean {
  const p = tryParseUuid(text);
  if (p === undefined) return false;
  if (p.text === '00000000-0000-0000-0000-000000000000' || p.text === 'ffffffff-ffff-ffff-ffff-ffffffffffff') return true;
  return p.variant === 'rfc9562' && p.version >= 1 && p.version <= 8;
}

/** Milliseconds since the Unix epoch in a v7 UUID (its first 48 bits). */
export function uuidV7TimestampMs(bytes: Uint8Array): number {
  let ms = 0;
  for (let i = 0; i < 6; i++) ms = ms * 256 + bytes[i]!;
  return ms;
}

/** 100-ns intervals between 1582-10-15 (the Gregorian epoch of v1/v6) and 1970-01-01. */
const GREGORIAN_OFFSET_100NS = 122192928000000000n;

export interface UuidDescription {
  readonly text: string;
  readonly version: number;
  readonly variant: UuidVariant;
  /** For v1, v6 and v7: the embedded time in Unix ms (floored). */
  readonly timestampMs?: number;
  /** For v7: the 12-bit rand_a field (Sequoia's monotonic counter). */
  readonly randA?: number;
}

/** Decodes the fields of a UUID for `explain`. Throws INVALID_ARGUMENT when the text is not a UUID. */
export function describeUuid(text: string): UuidDescription {
  const { bytes: b, version, variant, text: canonical } = parseUuid(text);
  if (variant === 'rfc9562' && version === 7) {
    return { text: canonical, version, variant, timestampMs: uuidV7TimestampMs(b), randA: ((b[6]! & 0x0f) << 8) | b[7]! };
  }
  if (variant === 'rfc9562' && (version === 1 || version === 6)) {
    const n = (i: number): bigint => BigInt(b[i]!);
    const ticks =
      version === 1
        ? ((((n(6) & 0x0fn) << 8n) | n(7)) << 48n) | (((n(4) << 8n) | n(5)) << 32n) | ((n(0) << 24n) | (n(1) << 16n) | (n(2) << 8n) | n(3))
        : (((n(0) << 24n) | (n(1) << 16n) | (n(2) << 8n) | n(3)) << 28n) | (((n(4) << 8n) | n(5)) << 12n) | ((n(6) & 0x0fn) << 8n) | n(7);
    const d = ticks - GREGORIAN_OFFSET_100NS;
    const ms = d >= 0n ? d / 10000n : -((-d + 9999n) / 10000n); // floor, also before 1970
    return { text: canonical, version, variant, timestampMs: Number(ms) };
  }
  return { text: canonical, version, variant };
}
