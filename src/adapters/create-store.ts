/**
 * Turns a store URL into a SegmentStore. One place knows every scheme:
 *   sqlite:PATH (or sqlite::memory:), memory:,
 *   postgres://… or postgresql://…   (option: ?table=NAME, default sequoia_alloc)
 *   mysql://…                        (option: ?table=NAME; MySQL 8 or MariaDB 10.11+)
 *   redis://… or rediss://…          (options: ?keyPrefix=…&tagsKey=…)
 * and a comma-separated list of those for a multi-store HA set (store i, in
 * list order, hands out IDs ≡ i mod N; see multi-segment-store.ts). A comma
 * inside a password must be percent-encoded (%2C).
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { SegmentStore } from '../ports/segment-store.js';
import { MemorySegmentStore } from './memory/memory-segment-store.js';
import { MultiSegmentStore } from './multi/multi-segment-store.js';
import { MysqlSegmentStore } from './mysql/mysql-segment-store.js';
import { PostgresSegmentStore } from './postgres/postgres-segment-store.js';
import { RedisSegmentStore } from './redis/redis-segment-store.js';
import { SqliteSegmentStore } from './sqlite/sqlite-segment-store.js';

export const DEFAULT_STORE_URL = 'sqlite:./data/sequoia.db';

const SUPPORTED = 'use sqlite:PATH, postgres://…, mysql://…, redis://…, memory:, or several of them separated by commas';

/** Removes credentials from a store URL (or a comma-separated list) for logs and status pages. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^@/,]*)@/g, (_m, cred: string) => (cred.includes(':') ? `//${cred.split(':')[0]}:***@` : `//${cred}@`));
}

export function createStore(url: string): SegmentStore {
  const parts = url.split(',').map((p) => p.trim());
  if (parts.length > 1) {
    if (parts.some((p) => p === '')) throw new InvalidArgumentError(`store: empty entry in the store list ${JSON.stringify(redactStoreUrl(url))}`);
    return new MultiSegmentStore(parts.map(createSingleStore));
  }
  return createSingleStore(parts[0] ?? '');
}

function createSingleStore(u: string): SegmentStore {
  if (u === 'memory:') return new MemorySegmentStore();
  if (u.startsWith('sqlite:')) {
    const path = u.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') throw new InvalidArgumentError('store: sqlite URL needs a path, e.g. sqlite:./data/sequoia.db');
    return new SqliteSegmentStore({ path });
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(u)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const { rest, options } = takeParams(u, ['table']);
    return new PostgresSegmentStore({ connectionString: rest, table: options.table });
  }
  if (scheme === 'mysql') {
    const { rest, options } = takeParams(u, ['table']);
    return new MysqlSegmentStore({ uri: rest, table: options.table });
  }
  if (scheme === 'redis' || scheme === 'rediss') {
    const { rest, options } = takeParams(u, ['keyPrefix', 'tagsKey']);
    return new RedisSegmentStore({ url: rest, keyPrefix: options.keyPrefix, tagsKey: options.tagsKey });
  }
  throw new InvalidArgumentError(`store: unsupported URL ${JSON.stringify(redactStoreUrl(u))} (${SUPPORTED})`);
}

/** Takes Sequoia's own query parameters off a URL, leaving the driver's. */
function takeParams(u: string, names: readonly string[]): { rest: string; options: Record<string, string | undefined> } {
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    throw new InvalidArgumentError(`store: malformed URL ${JSON.stringify(redactStoreUrl(u))}`);
  }
  const options: Record<string, string | undefined> = {};
  for (const n of names) {
    const v = parsed.searchParams.get(n);
    if (v !== null) {
      if (v === '') throw new InvalidArgumentError(`store: URL parameter ${n} must not be empty`);
      options[n] = v;
      parsed.searchParams.delete(n);
    }
  }
  return { rest: parsed.toString(), options };
}
