/**
 * `sequoia-id/client`: IDs from Sequoia servers over HTTP, with a local buffer
 * per segment tag, failover across servers and typed errors.
 *
 * @example
 * import { createClient, SequoiaError } from 'sequoia-id/client';
 * const ids = createClient({ urls: ['http://10.0.0.1:8080', 'http://10.0.0.2:8080'], tags: ['order'] });
 * const id = await ids.next('order');        // bigint, from the local buffer most of the time
 * const maybe = ids.tryNext('order');        // bigint | undefined, synchronous
 * try { await ids.next('nope'); } catch (e) { if (e instanceof SequoiaError && e.code === 'TAG_NOT_FOUND') … }
 * await ids.close();
 *
 * Imports nothing from the server: safe to bundle into any Node 20+ service.
 */
export {
  createClient,
  SequoiaClient,
  type BatchOptions,
  type ClientOptions,
  type ClientStats,
  type ReserveEvent,
  type ReserveOptions,
  type SnowflakeOptions,
  type TagStats,
  type UuidOptions,
} from './client.js';
export type { RetryOptions } from './transport.js';
// What ClientOptions' clock, timers and random take: a test or a simulator drives the client through them.
export type { Clock } from '../core/clock.js';
export type { Random } from '../core/random.js';
export type { Timer, Timers } from '../core/timers.js';
export { isUniqueViolation } from './unique-violation.js';
export {
  ClockError,
  ERROR_CODES,
  InvalidArgumentError,
  SequoiaError,
  TagExistsError,
  TagNotFoundError,
  UnavailableError,
  errorFromCode,
  isSequoiaError,
  type ErrorCode,
} from '../core/errors.js';
