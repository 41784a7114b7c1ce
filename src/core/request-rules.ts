/**
 * Request limits and parameter rules, one home for every side that applies
 * them: the HTTP routes, the fast path, the services, the client SDK (which
 * splits larger batches) and the CLI.
 */
import { InvalidArgumentError } from './errors.js';
import type { Id } from './id.js';
import type { Layout } from './snowflake/layout.js';

/** Most IDs one request may ask for. */
export const MAX_COUNT = 10_000;

const COUNT_TEXT = /^[1-9][0-9]{0,4}$/;

/** A count given as text (a query parameter): 1..MAX_COUNT, else undefined. */
export function countFromText(raw: string): number | undefined {
  if (!COUNT_TEXT.test(raw)) return undefined;
  const n = Number(raw);
  return n <= MAX_COUNT ? n : undefined;
}

/** The `count` query parameter: 1 when absent; INVALID_ARGUMENT unless 1..MAX_COUNT as plain decimal text. */
export function parseCount(raw: unknown): number {
  if (raw === undefined) return 1;
  const n = typeof raw === 'string' ? countFromText(raw) : undefined;
  if (n === undefined) throw new InvalidArgumentError(`count must be an integer from 1 to ${MAX_COUNT}`);
  return n;
}

/** Throws unless `count` is an integer from 1 to MAX_COUNT (for callers holding a number). */
export function assertCount(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_COUNT)
    throw new InvalidArgumentError(`count must be an integer from 1 to ${MAX_COUNT}`);
  return count;
}

/** A layout name: a lower-case letter, then up to 39 of a-z, 0-9, `_` and `-`. */
export const LAYOUT_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/** The `layout` query parameter: undefined when absent (the default layout), INVALID_ARGUMENT unless a layout name. */
export function parseLayoutName(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !LAYOUT_NAME.test(raw))
    throw new InvalidArgumentError('layout must be a layout name (e.g. twitter, leaf, sonyflake)');
  return raw;
}

type Sharded = Pick<Layout, 'name' | 'shardBits'>;

const SHARD_TEXT = /^(0|[1-9][0-9]{0,8})$/;
const MAX_SHARD_KEY = 256;

/** FNV-1a 32-bit of a shard key, mod the shard count: the same key always lands on the same shard. */
export function shardOf(key: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

/**
 * The shard of a request from its text parameters: `shard` (0..shards-1) or
 * `shardKey` (hashed), exactly one of them when the layout has a shard field
 * and neither when it has none (0).
 */
export function parseShard(layout: Sharded, q: { readonly shard?: unknown; readonly shardKey?: unknown }): number {
  if (layout.shardBits === 0) {
    if (q.shard !== undefined || q.shardKey !== undefined) throw new InvalidArgumentError(`layout ${layout.name} has no shard field`);
    return 0;
  }
  const shards = 2 ** layout.shardBits;
  if (q.shard !== undefined && q.shardKey !== undefined) throw new InvalidArgumentError('give shard or shardKey, not both');
  if (q.shardKey !== undefined) {
    if (typeof q.shardKey !== 'string' || q.shardKey.length === 0 || q.shardKey.length > MAX_SHARD_KEY) {
      throw new InvalidArgumentError(`shardKey must be 1-${MAX_SHARD_KEY} characters`);
    }
    return shardOf(q.shardKey, shards);
  }
  if (q.shard === undefined) throw new InvalidArgumentError(`layout ${layout.name} needs shard (0..${shards - 1}) or shardKey`);
  if (typeof q.shard !== 'string' || !SHARD_TEXT.test(q.shard) || Number(q.shard) >= shards) throw shardError(layout);
  return Number(q.shard);
}

/** Throws unless `shard` is a shard of the layout (0 for a layout without a shard field); for callers holding a number. */
export function assertShard(layout: Sharded, shard: number): number {
  const shards = 2 ** layout.shardBits;
  if (!Number.isSafeInteger(shard) || shard < 0 || shard >= shards) throw shardError(layout);
  return shard;
}

function shardError(layout: Sharded): InvalidArgumentError {
  return new InvalidArgumentError(`shard must be an integer from 0 to ${2 ** layout.shardBits - 1}`);
}

/** The body of a snowflake batch, `{"layout":…,"ids":["…",…]}`. */
export function snowflakeIdsJson(layout: string, ids: readonly string[]): string {
  return `{"layout":${JSON.stringify(layout)},"ids":["${ids.join('","')}"]}`;
}

/** The body of a segment batch, `{"tag":…,"ids":["…",…]}`: IDs as decimal strings, written by hand on the hot path. */
export function idsJson(tag: string, ids: readonly Id[]): string {
  return `{"tag":${JSON.stringify(tag)},"ids":["${ids.join('","')}"]}`;
}

/**
 * The header a server puts on every answer once it drains before stopping
 * (SIGTERM): the client SDK sends its next calls to another server.
 */
export const DRAINING_HEADER = 'sequoia-draining';
