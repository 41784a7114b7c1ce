/**
 * The zookeeper worker-id provider when its session expires under it, with
 * real processes: server A (`?node=shared`) is paused (SIGSTOP) past the
 * session timeout, B starts with the same node name and takes A's node, A is
 * resumed and both are asked for snowflake IDs. A must not issue on the id B
 * now holds (it refuses with 503), and no ID repeats across A and B. Before
 * the fix A went on issuing on worker 0 beside B.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { holders, pausedPastExpiry, take } from '../helpers/paused-holder.js';
import { describeWithService } from '../helpers/services.js';
import { connectZk, ZK } from '../helpers/zookeeper.js';

const { tmp, serve } = holders('sequoia-zk-expiry-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const describeZk = await describeWithService('ZooKeeper', async () => {
  (await connectZk()).close();
});

describeZk('zookeeper provider: a holder whose session expired (real ZooKeeper, real processes)', () => {
  it('paused past the session timeout, then resumed beside a new holder of its node name: refuses, no ID repeats', async () => {
    const spec = `zookeeper:${ZK}/sequoia-test/${randomUUID().slice(0, 8)}?node=shared`;
    const { a, b, fromA } = await pausedPastExpiry({
      serve: () => serve(spec, tmp()),
      // The session timeout is 6 s; ZooKeeper expires sessions on its 2 s tick.
      awaitExpiry: async () => {
        await sleep(10_000);
      },
      firstOf: async (b) => {
        await expect.poll(() => b.output(), { timeout: 15_000 }).toMatch(/"how":"restart: own node"/);
        return take(b, 1000);
      },
    });
    expect(fromA.flatMap((r) => r.ids)).toEqual([]);
    for (const r of fromA) {
      expect(r.status).toBe(503);
      // ZooKeeper not reached yet (STORE_UNAVAILABLE), or the session known gone (LEASE_LOST).
      expect(['LEASE_LOST', 'STORE_UNAVAILABLE']).toContain(r.code);
    }
    // A's session is gone and B holds the name: A refuses for good with LEASE_LOST.
    await expect.poll(async () => (await take(a, 1)).code, { timeout: 20_000 }).toBe('LEASE_LOST');
    expect(a.output()).toMatch(/another live process runs as shared/);
    expect((await take(b, 1000)).status).toBe(200);
  }, 90_000);
});
