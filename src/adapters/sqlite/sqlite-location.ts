import { resolve } from 'node:path';

/**
 * A SQLite store's location as a state dir is bound to it: its absolute path.
 * Its own module, free of the driver: the command names a store's location
 * without loading SQLite.
 */
export function sqliteLocation(path: string): string {
  return path === ':memory:' ? 'sqlite::memory:' : `sqlite:${resolve(path)}`;
}
