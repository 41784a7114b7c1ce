import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteSegmentStore } from '../../src/adapters/sqlite/sqlite-segment-store.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

runSegmentStoreContract('sqlite (file, WAL)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-contract-sqlite-'));
  const path = join(dir, 'sequoia.db');
  const store = new SqliteSegmentStore({ path });
  const direct = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(path, { timeout: 5000 });
    db.defaultSafeIntegers(true);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    store,
    url: `sqlite:${path}`,
    snapshot: async (tag) =>
      direct((db) => (db.prepare('SELECT max_id FROM sequoia_alloc WHERE tag = ?').get(tag) as { max_id: bigint }).max_id),
    restore: async (tag, snap) => {
      direct((db) => db.prepare('UPDATE sequoia_alloc SET max_id = ? WHERE tag = ?').run(snap as bigint, tag));
    },
    reopen: async () => new SqliteSegmentStore({ path }),
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
