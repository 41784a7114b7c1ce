import pg from 'pg';
import { expect, it } from 'vitest';
import { describeWithService } from '../helpers/services.js';
import { postgresHarness, probePostgres } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('postgres', () => runSegmentStoreContract('postgres', postgresHarness));

describePg('postgres: own cases', () => {
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
});
