/**
 * A reserve file kept beside a SQLite file on a disk that may fill up (issue
 * 28): while it exists, the space it holds is ours. When a write finds the
 * disk full, giving it up leaves room for SQLite to checkpoint its log and
 * for one more write (a restart's schema check or worker-id lease); every
 * later write refuses until the reserve can be written again, i.e. until
 * space returns. Nothing needs deleting by hand.
 */
import { closeSync, fsyncSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { UnavailableError } from '../../../core/errors.js';

export const RESERVE_BYTES = 64 * 1024;

/** The refusal of a write when the reserve cannot be written; `code` is the system's (ENOSPC …). */
export type ReserveRefusal = (code: string, cause: unknown) => Error;

/** A store's refusal: STORE_UNAVAILABLE naming the store (`what`), to be retried. */
export function storeDiskFull(what: string): ReserveRefusal {
  return (code, cause) =>
    new UnavailableError(
      'STORE_UNAVAILABLE',
      `the disk of the ${what} is full (${code}): no room for its ${RESERVE_BYTES / 1024} KiB reserve`,
      {
        cause,
        retryAfterMs: 1000,
      },
    );
}

export class DiskReserve {
  constructor(
    readonly path: string,
    private readonly refuse: ReserveRefusal,
  ) {}

  /** Writes the reserve if it is missing or short; throws the refusal (disk full) when it cannot. */
  keep(): void {
    let size = -1;
    try {
      size = statSync(this.path).size;
    } catch {
      // missing
    }
    if (size >= RESERVE_BYTES) return;
    try {
      const fd = openSync(this.path, 'w');
      try {
        writeSync(fd, Buffer.alloc(RESERVE_BYTES));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      rmSync(this.path, { force: true });
      throw this.refuse((e as { code?: string }).code ?? 'ENOSPC', e);
    }
  }

  /** Like keep(), but never throws (at start: a full disk must not stop a restart). */
  tryKeep(): void {
    try {
      this.keep();
    } catch {
      // writes refuse until space returns
    }
  }

  /** Frees the reserve; answers whether there was one to free. */
  giveUp(): boolean {
    try {
      statSync(this.path);
    } catch {
      return false;
    }
    rmSync(this.path, { force: true });
    return true;
  }
}

/** SQLite or the OS saying the disk is full (also when wrapped as a SequoiaError's cause). */
export function diskFull(e: unknown): boolean {
  for (let x: unknown = e, i = 0; x && i < 4; x = (x as { cause?: unknown }).cause, i++) {
    const code = (x as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === 'ENOSPC') return true;
    if (typeof (x as { message?: unknown }).message === 'string' && /\((SQLITE_FULL|ENOSPC)\)/.test((x as Error).message)) return true;
  }
  return false;
}

/**
 * `target` with its write methods (`writes`) guarded by `reserve`: each first
 * keeps the reserve (refusing on a full disk); one that fails on a full disk
 * gives the reserve up, lets `onFull` checkpoint, and is tried once more.
 */
export function guardWrites<T extends object>(target: T, writes: readonly string[], reserve: DiskReserve, onFull: () => void): T {
  const names = new Set(writes);
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v = Reflect.get(t, prop, receiver) as unknown;
      if (typeof prop !== 'string' || typeof v !== 'function' || !names.has(prop)) return v;
      const fn = v as (...a: unknown[]) => Promise<unknown>;
      return async (...args: unknown[]) => {
        reserve.keep();
        try {
          return await fn.apply(t, args);
        } catch (e) {
          if (!diskFull(e) || !reserve.giveUp()) throw e;
          onFull();
          return await fn.apply(t, args);
        }
      };
    },
  });
}
