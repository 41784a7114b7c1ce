/**
 * TypeID (https://github.com/jetify-com/typeid, spec v0.3): a type prefix, `_`,
 * and a UUID as 26 symbols of lowercase Crockford Base32.
 *
 *   user_2x4y6z8a0b1c2d3e4f5g6h7j8k
 *   └──┘ └────────────────────────┘
 *   prefix  suffix: 128 bits, the first symbol carrying the top 3 (0–7)
 *
 * Prefix: 0–63 characters of `a`–`z` and `_`, neither first nor last `_`;
 * an empty prefix is written without the separator. The suffix is the UUID's
 * 128 bits exactly as ULID text writes them (same symbols, same order) but
 * lowercase only: the spec rejects upper case, Crockford's `i l o u` aliases
 * and hyphens, so decoding here is stricter than `ulidToBytes`. The last `_`
 * separates (a prefix may hold `_`, a suffix never does).
 *
 * New TypeIDs carry a UUIDv7 from `UuidV7Generator`, so they sort by time
 * within a prefix like the project's other v7 IDs.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Random } from '../random.js';
import { bytesToUlid, ulidToBytes } from '../uuid/ulid.js';
import { type UuidDescription, describeUuid, formatUuid, parseUuid } from '../uuid/uuid-text.js';
import { UuidV7Generator } from '../uuid/uuid-v7.js';

export const TYPEID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const TYPEID_PREFIX_MAX = 63;
const PREFIX = /^(?:[a-z](?:[a-z_]{0,61}[a-z])?)?$/;
const SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/** The prefix rule in words, for error messages. */
export const TYPEID_PREFIX_RULE = 'at most 63 lowercase letters a-z and underscores, not starting or ending with _';

export function isValidTypeIdPrefix(prefix: unknown): prefix is string {
  return typeof prefix === 'string' && PREFIX.test(prefix);
}

function assertPrefix(prefix: unknown, field: string): string {
  if (!isValidTypeIdPrefix(prefix)) {
    throw new InvalidArgumentError(`${field} ${JSON.stringify(String(prefix).slice(0, 80))} is not a TypeID prefix: ${TYPEID_PREFIX_RULE}`);
  }
  return prefix;
}

export interface ParsedTypeId {
  /** The type prefix; '' when the TypeID has none. */
  readonly prefix: string;
  /** The 26-symbol suffix. */
  readonly suffix: string;
  /** The UUID, canonical lowercase hyphenated text. */
  readonly uuid: string;
  /** The UUID's 16 bytes. */
  readonly bytes: Uint8Array;
}

/**
 * A TypeID from a prefix and a UUID (text in any form `parseUuid` takes, or 16 bytes).
 * @example formatTypeId('prefix', '01890a5d-ac96-774b-bcce-b302099a8057') === 'prefix_01h455vb4pex5vsknk084sn02q'
 */
export function formatTypeId(prefix: string, uuid: string | Uint8Array): string {
  assertPrefix(prefix, 'prefix');
  let bytes: Uint8Array;
  if (typeof uuid === 'string') bytes = parseUuid(uuid).bytes;
  else if (uuid instanceof Uint8Array && uuid.length === 16) bytes = uuid;
  else throw new InvalidArgumentError('uuid must be UUID text or 16 bytes');
  const suffix = bytesToUlid(bytes).toLowerCase();
  return prefix === '' ? suffix : `${prefix}_${suffix}`;
}

/** Parses a TypeID; undefined when the text is not one (the spec's invalid vectors all are). */
export function tryParseTypeId(text: string): ParsedTypeId | undefined {
  if (typeof text !== 'string' || text.length > TYPEID_PREFIX_MAX + 1 + 26) return undefined;
  const sep = text.lastIndexOf('_');
  const prefix = sep < 0 ? '' : text.slice(0, sep);
  const suffix = sep < 0 ? text : text.slice(sep + 1);
  if (sep === 0 || !PREFIX.test(prefix) || !SUFFIX.test(suffix)) return undefined;
  const bytes = ulidToBytes(suffix);
  return { prefix, suffix, uuid: formatUuid(bytes), bytes };
}

/**
 * Parses a TypeID. With `expectedPrefix`, the prefix must be that one.
 * Throws INVALID_ARGUMENT saying what is wrong.
 * @example parseTypeId('prefix_01h455vb4pex5vsknk084sn02q').uuid === '01890a5d-ac96-774b-bcce-b302099a8057'
 */
export function parseTypeId(text: string, expectedPrefix?: string): ParsedTypeId {
  const parsed = tryParseTypeId(text);
  if (parsed === undefined) throw new InvalidArgumentError(typeIdProblem(text));
  if (expectedPrefix !== undefined && parsed.prefix !== expectedPrefix) {
    throw new InvalidArgumentError(`TypeID prefix is ${JSON.stringify(parsed.prefix)}, expected ${JSON.stringify(expectedPrefix)}`);
  }
  return parsed;
}

/** Why `text` is not a TypeID, in words (for the error; the checks themselves are `tryParseTypeId`). */
function typeIdProblem(text: unknown): string {
  const shown = JSON.stringify(String(text).slice(0, 100));
  if (typeof text !== 'string') return 'a TypeID must be a string';
  const sep = text.lastIndexOf('_');
  const prefix = sep < 0 ? '' : text.slice(0, sep);
  const suffix = sep < 0 ? text : text.slice(sep + 1);
  if (sep === 0) return `${shown} is not a TypeID: an empty prefix is written without "_"`;
  if (!PREFIX.test(prefix)) return `${shown} is not a TypeID: its prefix must be ${TYPEID_PREFIX_RULE}`;
  if (suffix.length !== 26) return `${shown} is not a TypeID: its suffix must be 26 symbols, got ${suffix.length}`;
  if (suffix.charCodeAt(0) > 55) return `${shown} is not a TypeID: its suffix encodes more than 128 bits (first symbol above 7)`;
  return `${shown} is not a TypeID: its suffix may only use ${TYPEID_ALPHABET}`;
}

export interface TypeIdDescription extends Omit<UuidDescription, 'text'> {
  readonly typeid: string;
  readonly prefix: string;
  readonly uuid: string;
}

/** The fields of a TypeID for `explain`: its prefix, its UUID and what the UUID holds (a v7's time). */
export function describeTypeId(text: string): TypeIdDescription {
  const p = parseTypeId(text);
  const { text: uuid, ...d } = describeUuid(p.uuid);
  return { typeid: text, prefix: p.prefix, uuid, ...d };
}

export interface TypeIdOptions {
  /** The type prefix of every ID (rule: TYPEID_PREFIX_RULE); '' for none. */
  prefix: string;
  clock: Clock;
  random: Random;
}

/**
 * New TypeIDs of one prefix, on a UUIDv7 generator (monotonic within this
 * generator, as `UuidV7Generator` is).
 * @example new TypeIdGenerator({ prefix: 'user', clock: systemClock, random: systemRandom }).next() // 'user_01jf…'
 */
export class TypeIdGenerator {
  readonly prefix: string;
  private readonly head: string;
  private readonly uuids: UuidV7Generator;
  private readonly scratch = new Uint8Array(16);

  constructor(options: TypeIdOptions) {
    this.prefix = assertPrefix(options.prefix, 'prefix');
    this.head = this.prefix === '' ? '' : `${this.prefix}_`;
    this.uuids = new UuidV7Generator({ clock: options.clock, random: options.random });
  }

  next(): string {
    return this.head + bytesToUlid(this.uuids.nextBytes(this.scratch)).toLowerCase();
  }
}
