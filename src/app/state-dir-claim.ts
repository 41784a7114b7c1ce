/**
 * A state dir belongs to one server and one store (DESIGN.md invariant 5,
 * issue 28 item 8). The server's root process (a one-process server, or the
 * primary of `--workers N`) locks it for its life (`server-lock.ts`); every
 * user of it checks that it belongs to the configured store: a server binds an
 * unbound dir to its store; the CLI's `fence` and `gen segment` only check.
 * A dir bound to another store is refused at start, naming that store.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { lockServer, type ServerLock } from '../adapters/state-dir/server-lock.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { InvalidArgumentError } from '../core/errors.js';
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

/** A server's state dir as `sequoia migrate --state-dir` moves it to the new store. */
export interface MigratingStateDir {
  /** The store the dir is bound to now (undefined: none yet). */
  readonly bound: string | undefined;
  /** The new store's identity, as the dir will name it. */
  readonly to: string;
  /** The highest mark of each tag (over its residue classes too): IDs the server handed out end at or below it. */
  readonly marks: ReadonlyMap<string, bigint>;
  /** Binds the dir to the new store, its marks kept (their trips against the old store's epochs cleared). */
  rebind(): Promise<'rebound' | 'bound'>;
  release(): Promise<void>;
}

/**
 * Opens a server's state dir for `migrate`: it must exist (a typo must not
 * pass for a dir with no marks), belong to the old store or already to the
 * new one, and (unless `dryRun`) no server may run on it: the server lock is
 * held until `release`, so none starts on the old binding meanwhile.
 */
export async function openStateDirForMigration(
  stateDir: string,
  fromUrl: string,
  toUrl: string,
  dryRun: boolean,
): Promise<MigratingStateDir> {
  if (!existsSync(join(stateDir, 'state.db'))) {
    throw new InvalidArgumentError(`--state-dir ${stateDir}: no state dir there (no state.db); name the dir the server ran with`);
  }
  const from = storeIdentity(fromUrl);
  const to = storeIdentity(toUrl);
  const lock = dryRun ? undefined : claimStateDir(stateDir, toUrl);
  let state: StateDir | undefined;
  try {
    state = new StateDir(stateDir);
    const bound = await state.boundStore();
    if (bound !== undefined && bound !== from && bound !== to) {
      throw new InvalidArgumentError(
        `--state-dir ${stateDir} belongs to store ${bound}, neither --from (${from}) nor --store (${to}): its marks describe that store`,
      );
    }
    const marks = new Map<string, bigint>();
    for (const [key, m] of await state.allMarks()) {
      // A multi-store set's marks are kept per residue class, `tag#stride:offset` ('#' is not legal in tags).
      const tag = key.split('#')[0] as string;
      if ((marks.get(tag) ?? -1n) < m.mark) marks.set(tag, m.mark);
    }
    const open = state;
    return {
      bound,
      to,
      marks,
      rebind: () => open.rebindStore(from, to),
      release: async () => {
        await open.close();
        lock?.release();
      },
    };
  } catch (e) {
    await state?.close().catch(() => {});
    lock?.release();
    throw e;
  }
}
