import { describe, expect, it } from 'vitest';
import { LeaseWorkerIdProvider, WorkerNodeWorkerIdProvider } from '../adapters/lease/lease-worker-id-provider.js';
import { MemoryWorkerLeaseStore } from '../adapters/memory/memory-worker-lease-store.js';
import { StaticWorkerIdProvider } from '../adapters/static/static-worker-id-provider.js';
import { k8sOrdinal } from '../adapters/k8s/k8s-ordinal.js';
import { UnavailableError } from '../core/errors.js';
import { decompose, getLayout, joinWorker } from '../core/snowflake/layout.js';
import { ManualClock } from '../../test/helpers/fakes.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../ports/worker-id-provider.js';
import { SnowflakeService, explainId } from './snowflake-service.js';

const twitter = getLayout('twitter');
const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);

describe('SnowflakeService', () => {
  it('two services on one lease store get different worker ids; a released id is reused after its last tick', async () => {
    const store = new MemoryWorkerLeaseStore();
    const a = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000 }) });
    const b = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000 }) });
    await a.start();
    await b.start();
    const ia = await a.nextMany(undefined, 5000);
    const ib = await b.nextMany(undefined, 5000);
    expect(new Set([...ia, ...ib]).size).toBe(10_000);
    expect(worker(ia[0] as string)).not.toBe(worker(ib[0] as string));
    const lastA = decompose(twitter, BigInt(ia[4999] as string)).tick;
    const wa = worker(ia[0] as string);
    await a.close();
    expect(store.peek(twitter.spaceKey, wa)?.lastTick).toBe(lastA);
    const c = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000 }) });
    const ic = await c.next();
    expect(worker(ic)).toBe(wa);
    expect(decompose(twitter, BigInt(ic)).tick).toBeGreaterThan(lastA);
    await Promise.all([b.close(), c.close()]);
  });

  it('a lease taken over by another holder stops the old one (LEASE_LOST), and it re-leases another id', async () => {
    const store = new MemoryWorkerLeaseStore();
    let mono = 0;
    const a = new SnowflakeService({
      provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000, monotonic: () => mono }),
      monotonic: () => mono,
    });
    const first = await a.next();
    const wa = worker(first);
    // a is "paused": its deadline passes and the store row is taken over.
    mono = 5000;
    const row = store.peek(twitter.spaceKey, wa);
    expect(row).toBeDefined();
    (row as { expiresAtMs: number }).expiresAtMs = 0;
    const b = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000 }) });
    const ib = await b.next();
    expect(worker(ib)).toBe(wa);
    // a wakes: its renewal is refused (generation changed), so it issues nothing on wa.
    const after = await a.nextMany(undefined, 100);
    expect(after.every((id) => worker(id) !== wa)).toBe(true);
    await Promise.all([a.close(), b.close()]);
  });

  it('a request that finds its lease taken over (no timer ran in between) re-leases another id at once', async () => {
    // Under load the background renewal may not run before the next request: that request's
    // own renewal is refused, and it must move to a fresh id rather than fail with LEASE_LOST.
    const store = new MemoryWorkerLeaseStore();
    let mono = 0;
    // A pause moves the wall clock with the monotonic one.
    const t0 = Date.now();
    const clock = { now: () => t0 + mono };
    const a = new SnowflakeService({
      provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000, monotonic: () => mono }),
      monotonic: () => mono,
      clock,
    });
    const wa = worker(await a.next());
    mono = 5000;
    (store.peek(twitter.spaceKey, wa) as { expiresAtMs: number }).expiresAtMs = 0;
    const taken = await store.acquire({ space: twitter.spaceKey, owner: 'another host', ttlMs: 60_000, workerCount: 1024, want: wa });
    expect(taken).toMatchObject({ workerId: wa });
    const after = await a.nextMany(undefined, 100);
    expect(after).toHaveLength(100);
    expect(after.every((id) => worker(id) !== wa)).toBe(true);
    await a.close();
  });

  it('a fixed id registered like a lease refuses a second holder', async () => {
    const store = new MemoryWorkerLeaseStore();
    const a = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000, fixedWorkerId: 7 }) });
    await a.start();
    const b = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000, fixedWorkerId: 7, acquireWaitMs: 300 }) });
    await expect(b.start()).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(worker(await a.next())).toBe(7);
    await a.close();
  });

  it('backup-worker leases reserved ids; instagram takes a shard per request', async () => {
    const store = new MemoryWorkerLeaseStore();
    const s = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store), clockPolicy: 'backup-worker' });
    await s.start();
    expect(s.report()).toHaveLength(1);
    const ig = getLayout('instagram');
    const id = await s.next('instagram', 1341);
    expect(decompose(ig, BigInt(id)).values.shard).toBe(1341);
    expect(explainId(id, ig)).toMatchObject({ layout: 'instagram', shard: 1341, sequence: 0 });
    await s.close();
  });

  it('static, worker-node and k8s-ordinal', async () => {
    const s = new SnowflakeService({ provider: new StaticWorkerIdProvider(33) });
    expect(worker(await s.next())).toBe(33);
    await s.close();
    const store = new MemoryWorkerLeaseStore();
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const w = new SnowflakeService({ provider: new WorkerNodeWorkerIdProvider(store) });
      ids.push(worker(await w.next()));
      await w.close();
    }
    expect(ids).toEqual([1, 2, 3]);
    expect(k8sOrdinal('ids-12')).toBe(12);
    expect(k8sOrdinal('ids-3', 100)).toBe(103);
    expect(() => k8sOrdinal('ids')).toThrow(/ordinal/);
  });

  it('refuses an exhausted layout', async () => {
    const s = new SnowflakeService({ provider: new StaticWorkerIdProvider(1) });
    await expect(Promise.resolve().then(() => s.next('uid-generator'))).rejects.toMatchObject({ code: 'ID_SPACE_EXHAUSTED' });
    await s.close();
  });

  it('a closed service answers SHUTTING_DOWN (not LEASE_LOST)', async () => {
    const s = new SnowflakeService({ provider: new StaticWorkerIdProvider(3) });
    await s.next();
    await s.close();
    await expect(Promise.resolve().then(() => s.next())).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    await expect(Promise.resolve().then(() => s.nextMany(undefined, 5))).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    await expect(s.worker('leaf')).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
  });

  it("a layout that can get no worker id is refused with the provider's code, and the provider is asked again only after a while", async () => {
    let mono = 0;
    let asked = 0;
    let free = false;
    const provider: WorkerIdProvider = {
      kind: 'test',
      leased: false,
      ttlMs: undefined,
      acquire: async (space: IdSpace): Promise<WorkerGrant> => {
        asked++;
        if (!free) throw new UnavailableError('ID_SPACE_EXHAUSTED', `no worker id left in ${space.label}`);
        return { workerId: 5, generation: 1, afterTick: -1, validUntil: Number.POSITIVE_INFINITY };
      },
      renew: async (_space: IdSpace, g: WorkerGrant) => g,
      release: async () => {},
      close: async () => {},
    };
    const s = new SnowflakeService({ provider, monotonic: () => mono, acquireRetryMs: 5000 });
    await expect(s.start()).rejects.toMatchObject({ code: 'ID_SPACE_EXHAUSTED' });
    for (let i = 0; i < 10; i++) await expect(Promise.resolve().then(() => s.next())).rejects.toMatchObject({ code: 'ID_SPACE_EXHAUSTED' });
    expect(asked).toBe(1);
    free = true;
    mono = 4999;
    await expect(Promise.resolve().then(() => s.next())).rejects.toMatchObject({ code: 'ID_SPACE_EXHAUSTED' });
    expect(asked).toBe(1);
    // Past the delay: this request is still refused at once, and the provider is asked in the background.
    mono = 5000;
    await expect(Promise.resolve().then(() => s.next())).rejects.toMatchObject({ code: 'ID_SPACE_EXHAUSTED' });
    expect(asked).toBe(2);
    await expect
      .poll(() =>
        Promise.resolve()
          .then(() => s.next())
          .then(worker, () => undefined),
      )
      .toBe(5);
    expect(asked).toBe(2);
    await s.close();
  });

  it('backup-worker: after the clock went ahead and back, close() releases each worker id with its own last tick', async () => {
    const store = new MemoryWorkerLeaseStore();
    const clock = new ManualClock();
    const s = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 60_000 }), clockPolicy: 'backup-worker', clock });
    const before = await s.next();
    const primary = worker(before);
    clock.step(86_400_000);
    const ahead = await s.next();
    expect(worker(ahead)).toBe(primary);
    clock.step(-86_400_000);
    clock.advance(5);
    const back = await s.next();
    const backup = worker(back);
    expect(backup).not.toBe(primary);
    await s.close();
    expect(store.peek(twitter.spaceKey, primary)?.lastTick).toBe(decompose(twitter, BigInt(ahead)).tick);
    expect(store.peek(twitter.spaceKey, backup)?.lastTick).toBe(decompose(twitter, BigInt(back)).tick);
  });
});
