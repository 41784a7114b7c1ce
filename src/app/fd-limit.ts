/**
 * The process's open-file limit (`ulimit -n`, the soft RLIMIT_NOFILE), read
 * from /proc/self/limits; undefined where there is no such file (not Linux).
 * The server keeps its connections below it (start-server.ts), so a
 * connection flood is refused before the process runs out of descriptors.
 */
import { readFileSync } from 'node:fs';
import { REFUSAL_ANSWERS } from '../server/http-front.js';

/** Descriptors kept free for everything that is not a client connection: stores, the state directory, logs, IPC. */
export const FD_RESERVE = 64;

export function openFileLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(read());
    if (!m || m[1] === 'unlimited') return undefined;
    return Number(m[1]);
  } catch {
    return undefined;
  }
}

/**
 * The connection cap: the configured one, lowered to the open-file limit minus the reserve and the
 * descriptors of the refusals answered at a time (at least 1), so a connection over the cap still
 * finds a descriptor for its answer.
 */
export function connectionCap(configured: number, fileLimit: number | undefined): number {
  if (fileLimit === undefined) return configured;
  return Math.max(1, Math.min(configured, fileLimit - FD_RESERVE - REFUSAL_ANSWERS));
}
