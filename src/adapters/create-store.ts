/**
 * Turns a store URL into a SegmentStore. One place knows every scheme:
 *   sqlite:PATH (or sqlite::memory:), memory:
 * Adapters for further backends register here.
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { SegmentStore } from '../ports/segment-store.js';
import { MemorySegmentStore } from './memory/memory-segment-store.js';
import { SqliteSegmentStore } from './sqlite/sqlite-segment-store.js';

export const DEFAULT_STORE_URL = 'sqlite:./data/sequoia.db';

/** Removes credentials from a store URL for logs and status pages. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_m, cred: string) => (cred.includes(':') ? `//${cred.split(':')[0]}:***@` : `//${cred}@`));
}

export function createStore(url: string): SegmentStore {
  const u = url.trim();
  if (u === 'memory:') return new MemorySegmentStore();
  if (u.startsWith('sqlite:')) {
    const path = u.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') throw new InvalidArgumentError('store: sqlite URL needs a path, e.g. sqlite:./data/sequoia.db');
    return new SqliteSegmentStore({ path });
  }
  throw new InvalidArgumentError(`store: unsupported URL ${JSON.stringify(redactStoreUrl(u))} (use sqlite:PATH or memory:)`);
}
