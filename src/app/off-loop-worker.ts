/**
 * The entry of the worker threads that run blocking storage off the event
 * loop (`adapters/kit/off-loop.ts`): the SQLite segment and lease stores of
 * one file (sharing one handle), and the state dir. Listed in the bundle
 * (package.json "bundle") so it sits beside the chunk that starts it.
 */
import { serveOffLoop } from '../adapters/kit/off-loop.js';
import { SqliteConnection } from '../adapters/sqlite/sqlite-connection.js';
import { SqliteSegmentStore } from '../adapters/sqlite/sqlite-segment-store.js';
import { SqliteWorkerLeaseStore } from '../adapters/sqlite/sqlite-worker-lease-store.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';

serveOffLoop({
  sqlite: (args) => {
    const connection = new SqliteConnection({ path: (args as { path: string }).path });
    return { segments: new SqliteSegmentStore({ connection }), leases: new SqliteWorkerLeaseStore(connection) };
  },
  'state-dir': (args) => ({ state: new StateDir((args as { dir: string }).dir) }),
});
