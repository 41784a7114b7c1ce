/**
 * A state dir belongs to one server and one store (DESIGN.md invariant 5,
 * issue 28 item 8). The server's root process (a one-process server, or the
 * primary of `--workers N`) locks it for its life (`server-lock.ts`); every
 * user of it checks that it belongs to the configured store: a server binds an
 * unbound dir to its store; the CLI's `fence` and `gen segment` only check.
 * A dir bound to another store is refused at start, naming that store.
 */
import { mkdirSync } from 'node:fs';
import { lockServer, type ServerLock } from '../adapters/state-dir/server-lock.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { storeIdentity } from './stores.js';

/** Held for the process's life (a lock object collected as garbage would close its handle and drop the lock). */
const held = new Set<ServerLock>();

/** Locks the state dir for this server (not taken by cluster workers: their primary holds it). */
export function claimStateDir(stateDir: string, storeUrl: string): ServerLock {
  mkdirSync(stateDir, { recursive: true });
  const lock = lockServer(stateDir, storeIdentity(storeUrl));
  held.add(lock);
  return {
    release: () => {
      held.delete(lock);
      lock.release();
    },
  };
}

/** Checks (and with `bind`, records on first use) which store the state dir belongs to, in this thread. */
export async function bindStateDir(stateDir: string, storeUrl: string, bind: boolean): Promise<void> {
  const state = new StateDir(stateDir);
  try {
    await state.bindStore(storeIdentity(storeUrl), bind);
  } finally {
    await state.close();
  }
}
