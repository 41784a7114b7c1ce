/**
 * SQLite and the state dir off the event loop (DESIGN.md invariant 6): a
 * server runs them in worker threads (`adapters/kit/off-loop/off-loop.ts`, entry
 * `off-loop-worker.ts`), so a lock held by another process, a busy timeout or
 * an fsync makes only the caller that needs the write wait. One-shot CLI
 * commands use them in-thread (nothing else waits there).
 */
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import type { SegmentStore } from '../ports/segment-store.js';
import type { ServerIdentity } from '../ports/range-ledger.js';
import type { WorkerLeaseStore } from '../ports/worker-lease-store.js';
import { OffLoopHost } from '../adapters/kit/off-loop/off-loop.js';
import { StateDir, StateDirReader } from '../adapters/state-dir/state-dir.js';
import { offLoopEntry } from './off-loop-entry.js';

/** The state dir's methods a server uses: marks, ticks, its store binding, close. */
export type StateDirPort = Required<HighWaterMarkStore> &
  Pick<StateDir, 'lastTick' | 'recordTick' | 'highestTick' | 'boundStore' | 'bindStore' | 'close' | 'where'>;

/**
 * The state dir in a worker thread (in-thread where there is no worker entry).
 * Marks are read in this thread, through a read-only handle that never waits
 * (`StateDirReader`), and from the worker only when that handle cannot answer
 * at once: a strict batch reads its floor while the previous batch's mark is
 * being recorded, and must not queue behind that fsync.
 */
export async function openStateDirOffLoop(dir: string): Promise<StateDirPort> {
  const entry = offLoopEntry();
  if (!entry) return new StateDir(dir);
  const host = await OffLoopHost.start(entry, 'state-dir', { dir }, 'state dir');
  const worker = host.proxy<StateDirPort>('state');
  let reader: StateDirReader;
  try {
    reader = new StateDirReader(dir);
  } catch {
    return worker;
  }
  const get = (tag: string) => {
    const read = reader.get(tag);
    return read === undefined ? worker.get(tag) : Promise.resolve(read ?? undefined);
  };
  const close = async () => {
    reader.close();
    await worker.close();
  };
  return new Proxy(worker, {
    get: (target, prop, receiver) => (prop === 'get' ? get : prop === 'close' ? close : Reflect.get(target, prop, receiver)),
  });
}

/** The segment and lease stores of one SQLite file, sharing one handle in one worker thread. */
export async function openSqliteOffLoop(
  path: string,
  identity: ServerIdentity,
): Promise<{ segments: SegmentStore; leases: () => WorkerLeaseStore } | undefined> {
  const entry = offLoopEntry();
  if (!entry) return undefined;
  const host = await OffLoopHost.start(entry, 'sqlite', { path, identity }, 'SQLite store');
  return { segments: host.proxy<SegmentStore>('segments'), leases: () => host.proxy<WorkerLeaseStore>('leases') };
}
