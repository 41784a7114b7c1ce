/**
 * Opening a SQLite file that other processes open at the same moment (the
 * workers of one server share their state dir and store file). Switching a
 * new file to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at
 * once, without waiting out the busy timeout, when two connections would
 * otherwise deadlock on that upgrade. Such a refusal says nothing about the
 * file: trying again shortly after succeeds.
 */
import Database from 'better-sqlite3';
import { monotonicMs, systemClock } from '../../../core/clock.js';

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The write-ahead log is checkpointed every WAL_CHECKPOINT_PAGES pages and
 * truncated back to WAL_LIMIT_BYTES after a checkpoint, instead of SQLite's
 * ~4 MB: a file on a small disk must never fill it with its own log (issue 28).
 */
export const WAL_CHECKPOINT_PAGES = 16;
export const WAL_LIMIT_BYTES = 64 * 1024;

/** SQLite or the OS saying the disk is full. */
export function isDiskFull(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return (
    code === 'SQLITE_FULL' ||
    code === 'ENOSPC' ||
    (typeof code === 'string' && code.startsWith('SQLITE_IOERR') && /full|space/i.test(String((e as Error).message)))
  );
}

function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Runs `attempt` until it succeeds, retrying only SQLITE_BUSY until
 * `timeoutMs` has passed. Blocking (it runs once, at start-up, before any
 * request is served), so the caller's constructor can stay synchronous.
 */
export function retryWhileBusy<T>(attempt: () => T, timeoutMs: number, now: () => number = () => monotonicMs(systemClock)): T {
  const deadline = now() + timeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      return attempt();
    } catch (e) {
      if (!isBusy(e) || now() >= deadline) throw e;
      Atomics.wait(pause, 0, 0, wait);
    }
  }
}

/**
 * Opens `path` in WAL mode with full fsync and runs `setUp` (schema,
 * migrations) on it, retrying the whole open while another process holds the
 * locks it needs. A failed attempt closes its handle.
 */
export function openSqlite(path: string, timeoutMs: number, setUp: (db: Database.Database) => void): Database.Database {
  return retryWhileBusy(() => {
    const db = new Database(path, { timeout: timeoutMs });
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
      db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
      setUp(db);
      return db;
    } catch (e) {
      db.close();
      throw e;
    }
  }, timeoutMs);
}
