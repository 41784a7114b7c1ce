import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { RedisSegmentStore } from '../../src/adapters/redis/redis-segment-store.js';
import { describeWithService } from '../helpers/services.js';
import { probeRedis, REDIS_URL, redisHarness } from './backends.js';
import { runSegmentStoreContract, allocateAfterReconnect, expectUnavailableQuickly } from './segment-store-contract.js';

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('redis', () => runSegmentStoreContract('redis', redisHarness));

describeRedis('redis: own cases', () => {
  it('reconnects by itself after its connection is killed (as on a server restart)', async () => {
    const h = await redisHarness();
    const store = h.store as RedisSegmentStore;
    const admin = new Redis(REDIS_URL);
    try {
      await store.init();
      await store.createTag({ tag: 'r', step: 10 });
      const a = await store.allocate('r');
      const id = await (store as unknown as { redis: Redis }).redis.client('ID');
      await admin.client('KILL', 'ID', String(id));
      const b = await allocateAfterReconnect(store, 'r', 20, 100);
      expect(b?.maxId).toBe(a.maxId + 10n);
    } finally {
      admin.disconnect();
      await h.cleanup();
    }
  });

  it('answers STORE_UNAVAILABLE quickly when the server is unreachable', async () => {
    await expectUnavailableQuickly(new RedisSegmentStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 500 }));
  });

  it('the Lua overflow check is exact around every 10^9 carry and at 2^63-1', async () => {
    const h = await redisHarness();
    try {
      await h.store.init();
      const cases: [bigint, number, boolean][] = [
        [999_999_999n, 1, true],
        [9_223_372_035_999_999_999n, 854_775_808, true], // carry into the high half, lands exactly on 2^63-1
        [9_223_372_035_999_999_999n, 854_775_809, false],
        [9_223_372_036_854_775_806n, 1, true],
        [9_223_372_036_854_775_807n, 1, false],
        [9_223_372_036_000_000_000n, 854_775_807, true],
        [9_223_372_036_000_000_001n, 854_775_807, false],
        [0n, 2_000_000_000, true],
      ];
      for (const [i, [start, step, fits]] of cases.entries()) {
        const t = `ovf${i}`;
        await h.store.createTag({ tag: t, step, start });
        const r = await h.store.allocate(t).then(
          (a) => a.maxId,
          (e: { code: string }) => e.code,
        );
        expect(r).toBe(fits ? start + BigInt(step) : 'ID_SPACE_EXHAUSTED');
      }
    } finally {
      await h.cleanup();
    }
  });

  it('refuses a tags key that a tag could collide with', () => {
    expect(() => new RedisSegmentStore({ url: REDIS_URL, keyPrefix: 'x:', tagsKey: 'x:tags' })).toThrow(/tagsKey/);
  });
});
