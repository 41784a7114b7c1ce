import { expect, it } from 'vitest';
import { RedisSegmentStore } from '../../src/adapters/redis/redis-segment-store.js';
import { describeWithService } from '../helpers/services.js';
import { probeRedis, REDIS_URL, redisHarness } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('redis', () => runSegmentStoreContract('redis', redisHarness));

describeRedis('redis: own cases', () => {
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

  it('a max_id that is no integer (written by hand) is STORE_UNAVAILABLE naming the tag and value, on every read; never a crash', async () => {
    const h = await redisHarness();
    try {
      await h.store.init();
      await h.store.createTag({ tag: 'hand', step: 10 });
      for (const v of ['abc', '1e3', '12.5']) {
        await h.restore('hand', v);
        for (const op of [() => h.store.getTag('hand'), () => h.store.listTags(), () => h.store.allocate('hand')]) {
          await expect(op()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        }
        await expect(h.store.getTag('hand')).rejects.toThrow(`max_id "${v}" for tag "hand", which is not an integer`);
      }
    } finally {
      await h.cleanup();
    }
  });

  it('refuses a tags key that a tag could collide with', () => {
    expect(() => new RedisSegmentStore({ url: REDIS_URL, keyPrefix: 'x:', tagsKey: 'x:tags' })).toThrow(/tagsKey/);
  });
});
