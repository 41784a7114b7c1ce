import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MysqlSegmentStore } from '../../src/adapters/mysql/mysql-segment-store.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, mysqlHarness, probeMysql, uniqueName } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('mysql', () => runSegmentStoreContract('mysql/mariadb', mysqlHarness));

// An allocation's statements go to the server together (one round trip): a failure in the middle must still undo the whole.
describeMysql('mysql: an allocation sent as one multi-statement transaction', () => {
  const table = uniqueName('sq_multi');
  let admin: mysql.Pool;
  let store: MysqlSegmentStore;

  beforeAll(async () => {
    admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 1, supportBigNumbers: true, bigNumberStrings: true });
    store = new MysqlSegmentStore({ uri: MYSQL_URL, table });
    await store.init();
  });

  afterAll(async () => {
    await store.close();
    await admin.query(`DROP TABLE IF EXISTS ${table}, ${table}_ledger`);
    await admin.end();
  });

  it('a ledger row that cannot be written undoes the range: max_id unchanged, the next allocation follows the last one', async () => {
    await store.createTag({ tag: 't', step: 10, start: 1n });
    const first = await store.allocate('t');
    await admin.query(
      `CREATE TRIGGER ${table}_refuse BEFORE INSERT ON ${table}_ledger FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'planted'`,
    );
    try {
      await expect(store.allocate('t')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await expect(store.allocate('t', 3)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect((await store.getTag('t'))?.maxId).toBe(first.maxId);
    } finally {
      await admin.query(`DROP TRIGGER ${table}_refuse`);
    }
    const next = await store.allocate('t');
    expect(next.maxId).toBe(first.maxId + 10n);
    const ledger = (await store.ledgerEntries('t')).filter((e) => e.kind === 'allocate');
    expect(ledger.map((e) => [e.first, e.last])).toEqual([
      [first.maxId - 10n, first.maxId - 1n],
      [next.maxId - 10n, next.maxId - 1n],
    ]);
  });
});
