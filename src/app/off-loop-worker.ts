/**
 * The entry of the worker threads that run blocking storage off the event
 * loop (`adapters/kit/off-loop/off-loop.ts`): the SQLite segment and lease stores of
 * one file (sharing one handle), and the state dir. Listed in the bundle
 * (package.json "bundle") so it sits beside the chunk that starts it.
 */
import Database from 'better-sqlite3';
import { DiskReserve, guardWrites, storeDiskFull } from '../adapters/kit/files/disk-reserve.js';
import { serveOffLoop } from '../adapters/kit/off-loop/off-loop.js';
import { SqliteConnection } from '../adapters/sqlite/sqlite-connection.js';
import { SqliteSegmentStore } from '../adapters/sqlite/sqlite-segment-store.js';
import { SqliteWorkerLeaseStore } from '../adapters/sqlite/sqlite-worker-lease-store.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import type { ServerIdentity } from '../ports/range-ledger.js';

/**
 * What may write to the store file: guarded by its disk reserve. Not `init`:
 * on a store that exists it only checks the schema, and a restart on a full
 * disk whose reserve was given up must still start (and refuse each write
 * until space returns) rather than exit; the range ledger makes every load a
 * growing write, so a full disk now gives the reserve up before such a restart.
 */
const SEGMENT_WRITES = ['allocate', 'createTag', 'updateTag', 'deleteTag', 'fence', 'giveBack', 'pruneLedger'];
const LEASE_WRITES = ['acquire', 'renew', 'release', 'registerNode', 'pruneLedger'];

serveOffLoop({
  sqlite: (args) => {
    // The identity of the process that started the thread: the ledger names the server, not its thread.
    const { path, identity } = args as { path: string; identity: ServerIdentity };
    const connection = new SqliteConnection({ path });
    // A small or full disk (issue 28): a reserve beside the file, given up to checkpoint and to let a restart work.
    const reserve = new DiskReserve(`${path}-reserve`, storeDiskFull('SQLite store'));
    reserve.tryKeep();
    const checkpoint = () => {
      try {
        const db = new Database(path, { timeout: 1000 });
        try {
          db.pragma('wal_checkpoint(TRUNCATE)');
        } finally {
          db.close();
        }
      } catch {
        // still full: the next write refuses until space returns
      }
    };
    return {
      segments: guardWrites(new SqliteSegmentStore({ connection, identity }), SEGMENT_WRITES, reserve, checkpoint),
      leases: guardWrites(new SqliteWorkerLeaseStore(connection), LEASE_WRITES, reserve, checkpoint),
    };
  },
  'state-dir': (args) => ({ state: new StateDir((args as { dir: string }).dir) }),
});
