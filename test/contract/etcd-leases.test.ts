/**
 * The lease contract on etcd (.ci/etcd.sh), through the provider servers use
 * (LeaseWorkerIdProvider over EtcdWorkerLeaseStore): acquire, renew, expiry,
 * takeover after the last reported tick, release, and two holders never
 * holding one id at once; and the ledger `explain` and `audit` read. etcd
 * counts lease TTLs in whole seconds, so expiry here waits a few seconds.
 */
import { afterAll, expect, it } from 'vitest';
import { EtcdWorkerLeaseStore } from '../../src/adapters/etcd/etcd-worker-lease-store.js';
import { parseEtcdSpec } from '../../src/adapters/etcd/etcd-spec.js';
import { LeaseWorkerIdProvider } from '../../src/adapters/lease/lease-worker-id-provider.js';
import { spansAt } from '../../src/core/snowflake/holding-index.js';
import type { IdSpace } from '../../src/ports/worker-id-provider.js';
import { ETCD, clearEtcdPrefix, etcdPrefix, probeEtcd } from '../helpers/etcd.js';
import { describeWithService } from '../helpers/services.js';

const prefixes: string[] = [];
const open: { close(): Promise<void> }[] = [];

function store(prefix: string): EtcdWorkerLeaseStore {
  const s = new EtcdWorkerLeaseStore(parseEtcdSpec(`etcd://${ETCD}${prefix}`));
  open.push(s);
  return s;
}

function fresh(): string {
  const p = etcdPrefix();
  prefixes.push(p);
  return p;
}

const space = (workerCount = 4): IdSpace => ({ key: `test-space:${workerCount}`, workerCount, unitMs: 1, label: 'test' });

function provider(prefix: string, owner: string, ttlMs = 1000): LeaseWorkerIdProvider {
  const p = new LeaseWorkerIdProvider(store(prefix), { ttlMs, owner, kind: 'etcd', acquireWaitMs: 0 });
  open.push(p);
  return p;
}

afterAll(async () => {
  for (const o of open) await o.close().catch(() => {});
  for (const p of prefixes) await clearEtcdPrefix(p).catch(() => {});
});

const describeEtcd = await describeWithService('etcd', probeEtcd);

describeEtcd('etcd leases (real etcd)', () => {
  it('acquire: live holders get different ids, lowest first; a full space is refused', async () => {
    const p = fresh();
    const sp = space(2);
    const a = await provider(p, 'h/1/a').acquire(sp);
    const b = await provider(p, 'h/2/b').acquire(sp);
    expect([a.workerId, b.workerId]).toEqual([0, 1]);
    expect(a).toMatchObject({ generation: 1, afterTick: -1 });
    await expect(provider(p, 'h/3/c').acquire(sp)).rejects.toMatchObject({ code: 'LEASE_LOST', message: /all 2 worker ids/ });
  });

  it('renew keeps the lease past its ttl and records the ceiling; the deadline ends before etcd could expire it', async () => {
    const p = fresh();
    const sp = space();
    const a = provider(p, 'h/1/a', 1000);
    const t0 = performance.now();
    let g = await a.acquire(sp);
    // Ends before the etcd lease could: at most ttl − margin after the request was sent.
    expect(g.validUntil).toBeLessThanOrEqual(t0 + 1000);
    const other = provider(p, 'h/2/b', 1000);
    for (let i = 1; i <= 8; i++) {
      g = await a.renew(sp, g, 100 * i);
      // Each renewal is a keepalive round; a lease that lived would let no one else take the id.
      const o = await other.acquire({ ...sp, workerCount: 1 }).catch((e: Error) => e);
      expect(o).toBeInstanceOf(Error);
      await new Promise((r) => setTimeout(r, 300));
    }
    const s = store(p);
    expect((await s.holdings(sp.key, 0)).map((h) => [h.owner, h.untilTick, h.released])).toEqual([['h/1/a', 800, false]]);
  });

  it('expiry: a holder that stops renewing loses the id; the new holder starts after its last reported tick; the old renew fails', async () => {
    const p = fresh();
    const sp = space(1);
    const a = provider(p, 'h/1/a', 1000);
    const ga = await a.acquire(sp);
    await a.renew(sp, ga, 4242);
    const b = provider(p, 'h/2/b', 1000);
    // etcd expires a 1 s lease within about 2 s (its minimum TTL and its expiry sweep).
    await expect.poll(async () => (await b.acquire(sp).catch(() => undefined))?.workerId, { timeout: 15_000, interval: 200 }).toBe(0);
    const leased = await store(p).holdings(sp.key, 0);
    expect(leased.map((h) => [h.generation, h.owner, h.began, h.fromTick > 4242])).toEqual([
      [1, 'h/1/a', 'grant', false],
      [2, 'h/2/b', 'takeover', true],
    ]);
    await expect(a.renew(sp, ga, 5000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    // The stale renewal wrote nothing: the takeover's start still follows 4242 only.
    const after = await store(p).holdings(sp.key, 0);
    expect(after[0]?.untilTick).toBe(4242);
  });

  it('release frees the id at once; the next holder gets it after the released tick, as a grant', async () => {
    const p = fresh();
    const sp = space(1);
    const a = provider(p, 'h/1/a');
    const ga = await a.acquire(sp);
    await a.renew(sp, ga, 300);
    await a.release(sp, ga, 120);
    const gb = await provider(p, 'h/2/b').acquire(sp);
    expect(gb).toMatchObject({ workerId: 0, generation: 2, afterTick: 120 });
    const hs = await store(p).holdings(sp.key, 0);
    expect(hs.map((h) => [h.owner, h.began, h.released, h.untilTick])).toEqual([
      ['h/1/a', 'grant', true, 120],
      ['h/2/b', 'grant', false, 120],
    ]);
    // What `explain` answers: who held worker 0 at a tick.
    expect(spansAt(hs, 100).map((h) => h.owner)).toEqual(['h/1/a']);
    const entries = await store(p).entries(sp.key, 0);
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'release', 'grant']);
  });

  it('independent processes racing for ids in one space never share one', async () => {
    const p = fresh();
    const sp = space(16);
    const grants = await Promise.all(Array.from({ length: 16 }, (_, i) => provider(p, `h/${i}/x`, 5000).acquire(sp)));
    expect(new Set(grants.map((g) => g.workerId)).size).toBe(16);
  });

  it('a takeover waits for the etcd lease: while the holder renews, no other holder ever gets its id', async () => {
    const p = fresh();
    const sp = space(1);
    const a = provider(p, 'h/1/a', 1000);
    let g = await a.acquire(sp);
    const b = provider(p, 'h/2/b', 1000);
    let tries = 0;
    const until = performance.now() + 4000;
    while (performance.now() < until) {
      g = await a.renew(sp, g, Math.floor(performance.now()));
      const r = await b.acquire(sp).catch((e: Error) => e);
      expect(r).toBeInstanceOf(Error);
      tries++;
    }
    expect(tries).toBeGreaterThan(3);
  });
});
