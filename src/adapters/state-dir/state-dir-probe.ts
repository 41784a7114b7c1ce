/**
 * Whether the state directory takes a write now, for /readyz: a small file
 * (`.ready-probe`) written and synced with asynchronous I/O (libuv's thread
 * pool), so the event loop never waits on it. A read-only or full file system,
 * a directory removed or no longer writable, all reject, with the system's
 * code (EROFS, ENOSPC, EACCES, ENOENT …) in the error for the log.
 */
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { RESERVE_BYTES } from '../kit/disk-reserve.js';

export const PROBE_FILE = '.ready-probe';

export async function probeStateDir(stateDir: string): Promise<void> {
  const f = await open(join(stateDir, PROBE_FILE), 'w');
  try {
    await f.writeFile(`${Date.now()}\n`);
    await f.sync();
  } finally {
    await f.close();
  }
  // The state dir keeps a reserve file (state-dir.ts) and refuses its own writes while the
  // reserve is given up (a full disk): a probe file may still fit in the room the reserve left.
  const reserve = await stat(join(stateDir, 'reserve')).catch(() => undefined);
  if (reserve === undefined || reserve.size < RESERVE_BYTES) {
    throw Object.assign(
      new Error('the state directory has given up its disk reserve (the disk is full): its writes are refused until space returns'),
      { code: 'ENOSPC' },
    );
  }
}
