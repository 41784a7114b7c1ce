/**
 * The etcd worker-id provider with real processes and a real etcd
 * (.ci/etcd.sh): server A is paused (SIGSTOP) past its lease, its etcd lease
 * runs out, server B starts and takes A's worker id (the lowest expired id)
 * after A's last reported tick, and A is resumed beside B. A must not issue
 * on the id B now holds, and no ID repeats across A and B; the lease ledger
 * (read as `sequoia audit` reads it) shows both holdings.
 */
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, expect, it } from 'vitest';
import { EtcdWorkerLeaseStore } from '../../src/adapters/etcd/etcd-worker-lease-store.js';
import { parseEtcdSpec } from '../../src/adapters/etcd/etcd-spec.js';
import { sequoia } from '../helpers/cli.js';
import { ETCD, clearEtcdPrefix, etcdPrefix, probeEtcd } from '../helpers/etcd.js';
import { holders, pausedPastExpiry, take, tick, twitter, worker } from '../helpers/paused-holder.js';
import { describeWithService } from '../helpers/services.js';

const prefix = etcdPrefix();
const SPEC = `etcd://${ETCD}${prefix}`;
const TTL_MS = 2000;
const { tmp, serve } = holders('sequoia-etcd-expiry-');

afterAll(async () => {
  await clearEtcdPrefix(prefix).catch(() => {});
});

it('a spec outside the form is refused at start with exit status 2, naming the form and never the password', () => {
  const r = sequoia(['serve', '--port', '0', '--worker-id-provider', 'etcd://app:s3cret@etcd-0']);
  expect(r.status).toBe(2);
  expect(r.stderr).toMatch(/worker id provider etcd: each member must be HOST:PORT; expected etcd:\/\/\[USER:PASSWORD@\]HOST:PORT/);
  expect(r.stderr + r.stdout).not.toMatch(/s3cret|\n\s+at /);
});

it('with etcd unreachable the server starts: snowflake answers 503 STORE_UNAVAILABLE, segment IDs are served', async () => {
  const dir = tmp();
  // Port 1 on loopback: nothing listens, so every etcd call is refused at once.
  const s = await serve('etcd://127.0.0.1:1/sequoia-test', dir);
  const r = await take(s, 1);
  expect({ status: r.status, code: r.code }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE' });
  expect(s.output()).not.toMatch(/\n\s+at /);
  const created = sequoia(['tag', 'create', 'etcd-down', '--store', `sqlite:${join(dir, 'x.db')}`]);
  expect(created.status, created.stderr).toBe(0);
  const seg = await fetch(`${s.url}/v1/segment/etcd-down?count=3`);
  expect(seg.status).toBe(200);
}, 60_000);

const describeEtcd = await describeWithService('etcd', probeEtcd);

describeEtcd('etcd provider: a holder paused past its lease (real etcd, real processes)', () => {
  it('paused past its lease while another server takes its id: the new holder starts after it, it issues nothing more, no ID repeats', async () => {
    const { a, wa, before, fromA } = await pausedPastExpiry({
      serve: () => serve(SPEC, tmp(), ['--worker-lease-ttl-ms', String(TTL_MS)]),
      // Waits for etcd itself to drop A's lease key (its lease ran out), not for a fixed time.
      awaitExpiry: async () => {
        const c = new Etcd3({ hosts: `http://${ETCD}` });
        try {
          const leases = c.getAll().prefix(`${prefix}/${encodeURIComponent(twitter.spaceKey)}/lease/`);
          await expect.poll(async () => (await leases.keys()).length, { timeout: 20_000, interval: 200 }).toBe(0);
        } finally {
          c.close();
        }
      },
      // B answers once its lease is taken (snowflake requests meanwhile are 503, the server up).
      firstOf: async (b) => {
        let first = await take(b, 1000);
        const deadline = Date.now() + 20_000;
        while (first.status !== 200 && Date.now() < deadline) {
          expect(first.status).toBe(503);
          first = await take(b, 1000);
        }
        return first;
      },
    });
    // A may lease another id once it learns it lost this one, but never issues on the id B holds.
    expect(fromA.flatMap((r) => r.ids).filter((id) => worker(id) === wa)).toEqual([]);
    expect(a.output()).toMatch(/passed to another holder|LEASE_LOST/);

    // The ledger `explain` and `audit` read: A's holding, then B's takeover after A's horizon.
    const ledger = new EtcdWorkerLeaseStore(parseEtcdSpec(SPEC));
    try {
      const hs = await ledger.holdings(twitter.spaceKey, wa);
      expect(hs.map((h) => h.began)).toEqual(['grant', 'takeover']);
      const [ha, hb] = hs as [(typeof hs)[0], (typeof hs)[0]];
      expect(hb.fromTick).toBeGreaterThan(ha.untilTick);
      expect(ha.untilTick).toBeGreaterThanOrEqual(Math.max(...before.map(tick)));
    } finally {
      await ledger.close();
    }
  }, 90_000);
});
