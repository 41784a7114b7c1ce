/**
 * The provider's local cache file: the worker id and last tick it held, so a
 * restart finds its node again (and starts after its tick) even while
 * ZooKeeper is briefly unreachable.
 */
import { readFileSync } from 'node:fs';
import { writeFileDurably } from '../kit/files/durable-file.js';

export interface CacheFile {
  readonly identity: string;
  readonly root: string;
  readonly space: string;
  readonly path: string;
  readonly workerId: number;
  readonly tick: number;
  /** Wall-clock ms of the last report ZooKeeper accepted. */
  readonly reportedAtMs: number;
}

export function readCache(file: string, identity: string, root: string, space: string): CacheFile | undefined {
  let c: Partial<CacheFile>;
  try {
    c = JSON.parse(readFileSync(file, 'utf8')) as Partial<CacheFile>;
  } catch {
    return undefined;
  }
  if (c.identity !== identity || c.root !== root || c.space !== space) return undefined;
  if (
    typeof c.path !== 'string' ||
    !Number.isSafeInteger(c.workerId) ||
    !Number.isSafeInteger(c.tick) ||
    typeof c.reportedAtMs !== 'number'
  )
    return undefined;
  return c as CacheFile;
}

/** A crash leaves the old cache or the new one, never half of one. */
export function writeCache(file: string, c: CacheFile): void {
  writeFileDurably(file, `${JSON.stringify(c)}\n`);
}
