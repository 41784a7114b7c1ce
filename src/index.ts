/**
 * Sequoia as a library: the coordination-free generators (UUIDv7/v4, ULID,
 * ObjectId, flake128, snowflake layouts, TypeID), codecs, permutation and
 * business numbers (prefixed IDs, the text of date-stamped daily numbers).
 * Loads no server, store or driver code: the segment service, its stores,
 * the daily-number issuer and the HTTP server are `sequoia-id/server`.
 *
 * @example
 * import { UuidV7Generator, systemClock, systemRandom } from 'sequoia-id';
 * const ids = new UuidV7Generator({ clock: systemClock, random: systemRandom });
 * ids.next(); // '0192…'
 */

// An explicit list: the documented API, nothing else (api/exports.txt is the checked report;
// a name added or removed here is a visible diff there).

export {
  BUSINESS_NUMBER_KINDS,
  type BusinessNumberCodec,
  type BusinessNumberFormat,
  type BusinessNumberKind,
  createBusinessNumberCodec,
} from './core/business-number/business-number.js';
export {
  DAILY_DEFAULT_DIGITS,
  type DailyNumberFormat,
  dailyTag,
  dayOfDailyTag,
  dayStamp,
  formatDailyNumber,
  issuingDay,
  type ParsedDailyNumber,
  parseDailyNumber,
  validateDailyNumberFormat,
  validateTimeZone,
} from './core/business-number/daily-number.js';
export {
  businessNumberFormatSpec,
  createPrefixedIdCodec,
  DEFAULT_PREFIXED_FORMAT,
  explainPrefixedId,
  type ParsedPrefixedId,
  parsePrefixedId,
  type PrefixedExplainResult,
  type PrefixedIdCodec,
  splitPrefixedId,
} from './core/business-number/prefixed-id.js';
export { type Clock, systemClock } from './core/clock.js';
export { BASE62_ALPHABET, decodeBase62, encodeBase62 } from './core/codecs/base62.js';
export {
  CROCKFORD32_ALPHABET,
  CROCKFORD32_CHECK_ALPHABET,
  crockford32CheckSymbol,
  type Crockford32Options,
  decodeCrockford32,
  encodeCrockford32,
} from './core/codecs/crockford32.js';
export { decodeDecimal, encodeDecimal } from './core/codecs/decimal.js';
export { bytesToHex, decodeHex, encodeHex, hexToBytes } from './core/codecs/hex.js';
export {
  ClockError,
  ERROR_CODES,
  type ErrorCode,
  errorFromCode,
  InvalidArgumentError,
  isSequoiaError,
  SequoiaError,
  TagExistsError,
  TagNotFoundError,
  UnavailableError,
} from './core/errors.js';
export {
  composeFlake128,
  decomposeFlake128,
  FLAKE128_MAX_SEQUENCE,
  FLAKE128_MAX_WORKER,
  type Flake128Fields,
  Flake128Generator,
  type Flake128Options,
  formatFlake128,
  parseFlake128,
  type RetryAfter,
} from './core/flake128/flake128.js';
export { type Id, idToBigInt, MAX_ID, MAX_SAFE, parseDecimalId, toId } from './core/id.js';
export { formatObjectId, ObjectIdGenerator, type ObjectIdOptions, type ParsedObjectId, parseObjectId } from './core/objectid/object-id.js';
export { type FeistelOptions, FeistelPermutation, MIN_KEY_BYTES } from './core/permutation/feistel-permutation.js';
export { PooledSystemRandom, type Random, systemRandom } from './core/random.js';
export { type Segment, SegmentBuffer } from './core/segment/segment-buffer.js';
export { nextStep } from './core/segment/step-policy.js';
export { explainId, type ExplainResult } from './core/snowflake/explain.js';
export {
  CLOCK_POLICIES,
  type ClockEvent,
  type ClockPolicy,
  type GeneratorStats,
  SnowflakeGenerator,
  type SnowflakeGeneratorOptions,
  type Wait,
  type WaitReason,
  type WorkerSlot,
} from './core/snowflake/generator.js';
export {
  compose,
  type DecodedId,
  decompose,
  DEFAULT_LAYOUT,
  defineLayout,
  defineLayouts,
  type FieldRole,
  getLayout,
  type Layout,
  type LayoutField,
  type LayoutSpec,
  lifetimeYears,
  PRESETS,
  type SequenceStart,
  TWITTER_EPOCH_MS,
  UID_GENERATOR_EPOCH_MS,
  type ValidateOptions,
} from './core/snowflake/layout.js';
export {
  BREAKS_AT_2_63,
  type ChangeCheck,
  checkChange,
  defineLineage,
  type Lineage,
  type LineageStep,
  type LineageVersion,
  versionAt,
  versionOf,
  type VersionCapacity,
} from './core/snowflake/lineage.js';
export { plan, type Plan, type PlanInput } from './core/snowflake/planner.js';
export {
  describeTypeId,
  formatTypeId,
  isValidTypeIdPrefix,
  type ParsedTypeId,
  parseTypeId,
  tryParseTypeId,
  TYPEID_ALPHABET,
  TYPEID_PREFIX_MAX,
  TYPEID_PREFIX_RULE,
  type TypeIdDescription,
  TypeIdGenerator,
  type TypeIdOptions,
} from './core/typeid/typeid.js';
export { bytesToUlid, ulidTimestampMs, ulidToBytes, ulidToUuid, uuidToUlid } from './core/uuid/ulid.js';
export {
  describeUuid,
  formatUuid,
  isValidUuid,
  type ParsedUuid,
  parseUuid,
  tryParseUuid,
  type UuidDescription,
  uuidV7TimestampMs,
  uuidVariant,
  type UuidVariant,
} from './core/uuid/uuid-text.js';
export { UuidV4Generator, type UuidV4Options } from './core/uuid/uuid-v4.js';
export { UUID_V7_MAX_MS, UuidV7Generator, type UuidV7Options } from './core/uuid/uuid-v7.js';
export { VERSION } from './version.js';
