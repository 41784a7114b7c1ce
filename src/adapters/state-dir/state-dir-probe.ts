/**
 * Whether the state directory takes a write now, for /readyz: a small file
 * (`.ready-probe`) written and synced with asynchronous I/O (libuv's thread
 * pool), so the event loop never waits on it. A read-only or full file system,
 * a directory removed or no longer writable, all reject, with the system's
 * code (EROFS, ENOSPC, EACCES, ENOENT …) in the error for the log.
 *
 * `stateDirProbe` also rejects once `state.db` is no longer the file the
 * server opened (replaced by rename or removed: the state dir then refuses
 * every mark, state-dir.ts), so /readyz says what the ID routes will.
 */
import { type Clock, systemClock } from '../../core/clock.js';
import { statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { RESERVE_BYTES } from '../kit/files/disk-reserve.js';

export const PROBE_FILE = '.ready-probe';

/** The probe of a state dir just opened: its `state.db` as it is now is the file the server has open. */
export function stateDirProbe(stateDir: string, clock: Clock = systemClock): () => Promise<void> {
  const path = join(stateDir, 'state.db');
  const opened = statSync(path, { throwIfNoEntry: false });
  return async () => {
    await probeStateDir(stateDir, clock);
    const now = await stat(path).catch(() => undefined);
    if (opened !== undefined && (now === undefined || now.dev !== opened.dev || now.ino !== opened.ino)) {
      throw Object.assign(
        new Error(`${path} is no longer the file this server opened (replaced or removed): its marks cannot be recorded`),
        {
          code: 'ESTALE',
        },
      );
    }
  };
}

async function probeStateDir(stateDir: string, clock: Clock): Promise<void> {
  const f = await open(join(stateDir, PROBE_FILE), 'w');
  try {
    await f.writeFile(`${clock.now()}\n`);
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
