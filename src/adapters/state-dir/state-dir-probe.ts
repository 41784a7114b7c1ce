/**
 * Whether the state directory takes a write now, for /readyz: a small file
 * (`.ready-probe`) written and synced with asynchronous I/O (libuv's thread
 * pool), so the event loop never waits on it. A read-only or full file system,
 * a directory removed or no longer writable, all reject, with the system's
 * code (EROFS, ENOSPC, EACCES, ENOENT …) in the error for the log.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';

export const PROBE_FILE = '.ready-probe';

export async function probeStateDir(stateDir: string): Promise<void> {
  const f = await open(join(stateDir, PROBE_FILE), 'w');
  try {
    await f.writeFile(`${Date.now()}\n`);
    await f.sync();
  } finally {
    await f.close();
  }
}
