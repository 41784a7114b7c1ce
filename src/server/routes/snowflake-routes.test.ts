import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseWorkerIdProvider } from '../../adapters/lease/lease-worker-id-provider.js';
import { MemorySegmentStore } from '../../adapters/memory/memory-segment-store.js';
import { MemoryWorkerLeaseStore } from '../../adapters/memory/memory-worker-lease-store.js';
import { MemoryHighWaterMarkStore } from '../../adapters/memory/memory-high-water-mark-store.js';
import { decompose, getLayout } from '../../core/snowflake/layout.js';
import { IdService } from '../../service/id-service.js';
import { SnowflakeService } from '../../service/snowflake-service.js';
import { buildApp } from '../build-app.js';
import { shardOf } from '../../core/request-rules.js';

let app: FastifyInstance;
let snowflake: SnowflakeService;

beforeAll(async () => {
  const service = new IdService({ store: new MemorySegmentStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  snowflake = new SnowflakeService({ provider: new LeaseWorkerIdProvider(new MemoryWorkerLeaseStore()) });
  await snowflake.start();
  app = await buildApp({ service, snowflake, metrics: false });
});
afterAll(async () => {
  await app.close();
  await snowflake.close();
});

describe('snowflake routes', () => {
  it('GET /v1/snowflake answers decimal strings in the layout', async () => {
    const r = await app.inject('/v1/snowflake?count=5000&layout=leaf');
    expect(r.statusCode).toBe(200);
    const body = r.json() as { layout: string; ids: string[] };
    expect(body.layout).toBe('leaf');
    expect(new Set(body.ids).size).toBe(5000);
    expect(body.ids.every((id) => /^[1-9][0-9]*$/.test(id))).toBe(true);
    const d = (await app.inject('/v1/snowflake')).json() as { layout: string };
    expect(d.layout).toBe('twitter');
  });

  it('the Leaf route answers text/plain', async () => {
    const r = await app.inject('/api/snowflake/get/order');
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/text\/plain/);
    expect(r.body).toMatch(/^[0-9]+$/);
    expect((await app.inject('/api/snowflake/get/bad%20tag')).statusCode).toBe(400);
  });

  it('explain decodes an ID', async () => {
    const id = (await app.inject('/api/snowflake/get/x')).body;
    const r = await app.inject(`/v1/explain/${id}?layout=twitter`);
    expect(r.statusCode).toBe(200);
    const e = r.json() as Record<string, unknown>;
    expect(Object.keys(e)).toEqual(['id', 'kind', 'layout', 'time', 'timestampMs', 'datacenter', 'worker', 'sequence']);
    expect(Math.abs(Date.parse(e.time as string) - Date.now())).toBeLessThan(5000);
    expect((await app.inject('/v1/explain/12x')).statusCode).toBe(400);
    expect((await app.inject('/v1/explain/1?layout=nope')).json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });

  it('instagram takes the shard per request, or hashes a shard key', async () => {
    const ig = getLayout('instagram');
    const a = (await app.inject('/v1/snowflake?layout=instagram&shard=1341&count=3')).json() as { ids: string[] };
    expect(a.ids.map((id) => decompose(ig, BigInt(id)).values.shard)).toEqual([1341, 1341, 1341]);
    const b = (await app.inject('/v1/snowflake?layout=instagram&shardKey=user-42')).json() as { ids: string[] };
    expect(decompose(ig, BigInt(b.ids[0] as string)).values.shard).toBe(shardOf('user-42', 8192));
    expect((await app.inject(`/v1/explain/${a.ids[0]}?layout=instagram`)).json()).toMatchObject({ shard: 1341 });
    expect((await app.inject('/v1/snowflake?layout=instagram')).statusCode).toBe(400);
    expect((await app.inject('/v1/snowflake?layout=instagram&shard=8192')).statusCode).toBe(400);
    expect((await app.inject('/v1/snowflake?layout=twitter&shard=1')).statusCode).toBe(400);
  });

  it('bad count and exhausted layouts are errors with codes', async () => {
    expect((await app.inject('/v1/snowflake?count=0')).statusCode).toBe(400);
    const r = await app.inject('/v1/snowflake?layout=uid-generator');
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ error: { code: 'ID_SPACE_EXHAUSTED' } });
  });

  it('reports what the metrics need', () => {
    const rows = snowflake.report();
    expect(rows.map((r) => r.generator).sort()).toEqual(['instagram', 'leaf', 'twitter']);
    expect(rows[0]?.leaseExpiresAtMs).toBeGreaterThan(Date.now());
    // The lease's length beside its expiry: what the lease alert compares them by.
    for (const r of rows) expect(r.leaseTtlMs, r.generator).toBe(10_000); // LeaseWorkerIdProvider's default ttl
  });
});

describe('snowflake workers in /v1/status', () => {
  it('lists each id space in use with its worker id, last tick and lease expiry', async () => {
    await app.inject('/v1/snowflake?layout=leaf');
    const st = (await app.inject('/v1/status')).json() as { workers: Array<Record<string, unknown>> };
    const leaf = st.workers.find((w) => w.generator === 'leaf');
    expect(leaf).toBeDefined();
    expect(typeof leaf!.workerId).toBe('number');
    expect(leaf!.lastTick as number).toBeGreaterThan(0);
    expect(leaf!.leaseExpiresInSeconds as number).toBeGreaterThan(0);
  });
});
