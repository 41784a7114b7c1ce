import mysql from 'mysql2/promise';
import { expect, it } from 'vitest';
import { MysqlSegmentStore } from '../../src/adapters/mysql/mysql-segment-store.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, mysqlHarness, probeMysql } from './backends.js';
import { runSegmentStoreContract, allocateAfterReconnect, expectUnavailableQuickly } from './segment-store-contract.js';

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('mysql', () => runSegmentStoreContract('mysql/mariadb', mysqlHarness));

describeMysql('mysql: own cases', () => {
  it('reconnects by itself after its connections are killed (as on a server restart)', async () => {
    const h = await mysqlHarness();
    const store = h.store as MysqlSegmentStore;
    const admin = await mysql.createConnection({ uri: MYSQL_URL });
    try {
      await store.init();
      await store.createTag({ tag: 'r', step: 10 });
      const a = await store.allocate('r');
      const [rows] = await admin.query<mysql.RowDataPacket[]>(
        'SELECT id FROM information_schema.PROCESSLIST WHERE id <> CONNECTION_ID() AND db = DATABASE() AND command = ?',
        ['Sleep'],
      );
      // Only our own idle pool connections sleep with no query here long enough to matter;
      // killing a stranger's idle connection would be rude, so restrict to the ones this store opened.
      const own = new Set<number>();
      const pool = (store as unknown as { pool: { pool: { _allConnections: { toArray(): { threadId: number }[] } } } }).pool;
      for (const c of pool.pool._allConnections.toArray()) own.add(c.threadId);
      for (const r of rows) if (own.has(Number(r.id))) await admin.query(`KILL ${Number(r.id)}`);
      expect(own.size).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 200));
      const b = await allocateAfterReconnect(store, 'r', 3, 0);
      expect(b?.maxId).toBe(a.maxId + 10n);
    } finally {
      await admin.end();
      await h.cleanup();
    }
  });

  it('answers STORE_UNAVAILABLE quickly when the server is unreachable', async () => {
    await expectUnavailableQuickly(new MysqlSegmentStore({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeoutMs: 1000 }));
  });

  it('several instances can init the schema at once', async () => {
    const h = await mysqlHarness();
    const table = (h.store as MysqlSegmentStore).table;
    const stores = Array.from({ length: 4 }, () => new MysqlSegmentStore({ uri: MYSQL_URL, table }));
    try {
      await Promise.all(stores.map((s) => s.init()));
      await stores[0]?.createTag({ tag: 'x' });
      expect((await stores[3]?.getTag('x'))?.step).toBe(1000);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await h.cleanup();
    }
  });
});
