import pg from 'pg';
import { expect, it } from 'vitest';
import { PostgresSegmentStore } from '../../src/adapters/postgres/postgres-segment-store.js';
import { describeWithService } from '../helpers/services.js';
import { POSTGRES_URL, postgresHarness, probePostgres } from './backends.js';
import { runSegmentStoreContract, allocateAfterReconnect, expectUnavailableQuickly } from './segment-store-contract.js';

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('postgres', () => runSegmentStoreContract('postgres', postgresHarness));

describePg('postgres: own cases', () => {
  it('reconnects by itself after its connections are killed (as on a server restart)', async () => {
    const h = await postgresHarness();
    const app = `sequoia_test_${process.pid}_${Date.now()}`;
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('application_name', app);
    const store = new PostgresSegmentStore({ connectionString: url.toString(), table: (h.store as PostgresSegmentStore).table });
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await h.store.init();
      await store.init();
      await store.createTag({ tag: 'r', step: 10 });
      const a = await store.allocate('r');
      const killed = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app]);
      expect(killed.rowCount).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 200));
      const b = await allocateAfterReconnect(store, 'r', 3, 0);
      expect(b?.maxId).toBe(a.maxId + 10n);
    } finally {
      await admin.end();
      await store.close();
      await h.cleanup();
    }
  });

  it('answers STORE_UNAVAILABLE quickly when the server is unreachable', async () => {
    await expectUnavailableQuickly(new PostgresSegmentStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectTimeoutMs: 1000 }));
  });

  it('reads BIGINT exactly even when a global pg type parser turns int8 into numbers', async () => {
    const h = await postgresHarness();
    const original = pg.types.getTypeParser(20);
    pg.types.setTypeParser(20, (v: string) => Number(v));
    try {
      await h.store.init();
      await h.store.createTag({ tag: 'big', step: 1, start: 9007199254740993n });
      expect((await h.store.allocate('big')).maxId).toBe(9007199254740994n);
      expect((await h.store.getTag('big'))?.maxId).toBe(9007199254740994n);
    } finally {
      pg.types.setTypeParser(20, original);
      await h.cleanup();
    }
  });

  it('several instances can init the schema at once', async () => {
    const h = await postgresHarness();
    const table = (h.store as PostgresSegmentStore).table;
    const stores = Array.from({ length: 4 }, () => new PostgresSegmentStore({ connectionString: POSTGRES_URL, table }));
    try {
      await Promise.all(stores.map((s) => s.init()));
      await stores[0]?.createTag({ tag: 'x' });
      expect((await stores[3]?.getTag('x'))?.step).toBe(1000);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await h.cleanup();
    }
  });

  it('rejects a table name that is not a plain identifier', () => {
    for (const table of ['Sequoia', 'a;drop table x', '1abc', 'a'.repeat(64), '']) {
      expect(() => new PostgresSegmentStore({ connectionString: POSTGRES_URL, table })).toThrow(/store: table/);
    }
  });
});
