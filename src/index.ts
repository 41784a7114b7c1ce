/**
 * Sequoia as a library: the coordination-free generators (UUIDv7/v4, ULID,
 * ObjectId, flake128, snowflake layouts), codecs, permutation and business
 * numbers. Loads no server, store or driver code: the segment service, its
 * stores and the HTTP server are `sequoia-id/server`.
 *
 * @example
 * import { UuidV7Generator, systemClock, systemRandom } from 'sequoia-id';
 * const ids = new UuidV7Generator({ clock: systemClock, random: systemRandom });
 * ids.next(); // '0192…'
 */
export * from './core/errors.js';
export * from './core/id.js';
export { SegmentBuffer, type Segment } from './core/segment/segment-buffer.js';
export { nextStep } from './core/segment/step-policy.js';
export { type Clock, systemClock } from './core/clock.js';
export { type Random, PooledSystemRandom, systemRandom } from './core/random.js';
export * from './core/uuid/index.js';
export * from './core/objectid/index.js';
export * from './core/flake128/index.js';
export * from './core/codecs/index.js';
export * from './core/permutation/index.js';
export * from './core/business-number/index.js';
export * from './core/snowflake/index.js';
export { VERSION } from './version.js';
