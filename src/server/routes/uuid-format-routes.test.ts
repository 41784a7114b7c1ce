import type { FastifyInstance } from 'fastify';
import { validate as uuidValidate, version as uuidVersion } from 'uuid';
import { decodeTime } from 'ulid';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../../adapters/memory/memory-high-water-mark-store.js';
import { createBusinessNumberCodec } from '../../core/business-number/index.js';
import { IdService } from '../../service/id-service.js';
import { buildApp } from '../build-app.js';
import { FormatRegistry } from '../formats.js';

const ORDER = { kind: 'permuted-base32', bits: 60, key: 'test-key-0123456789abcdef', width: 12, check: true } as const;
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function setup() {
  const service = new IdService({ store: new MemorySegmentStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  await service.createTag({ tag: 'order', step: 100 });
  app = await buildApp({ service, formats: new FormatRegistry({ order: ORDER }), metrics: false });
  return app;
}

describe('/v1/uuid', () => {
  it('gives count UUIDv7s, valid, version 7, strictly increasing', async () => {
    const a = await setup();
    const r = await a.inject('/v1/uuid?count=500');
    expect(r.statusCode).toBe(200);
    const ids = (r.json() as { ids: string[] }).ids;
    expect(ids).toHaveLength(500);
    for (const id of ids) {
      expect(uuidValidate(id)).toBe(true);
      expect(uuidVersion(id)).toBe(7);
    }
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });

  it('gives UUIDv4s and ULIDs on request, and refuses bad parameters', async () => {
    const a = await setup();
    const v4 = (await a.inject('/v1/uuid?version=4&count=3')).json() as { ids: string[] };
    expect(v4.ids.map((id) => uuidVersion(id))).toEqual([4, 4, 4]);
    const ulids = ((await a.inject('/v1/uuid?format=ulid&count=2')).json() as { ids: string[] }).ids;
    expect(Math.abs(decodeTime(ulids[0]!) - Date.now())).toBeLessThan(60_000);
    for (const q of ['version=1', 'version=', 'count=0', 'count=10001', 'format=x', 'version=4&format=ulid']) {
      const r = await a.inject(`/v1/uuid?${q}`);
      expect(r.statusCode).toBe(400);
      expect((r.json() as { error: { code: string } }).error.code).toBe('INVALID_ARGUMENT');
    }
  });
});

describe('?format= on segment routes', () => {
  it('turns segment IDs into the configured business number, decodable with the key', async () => {
    const a = await setup();
    const ids = ((await a.inject('/v1/segment/order?count=20&format=order')).json() as { ids: string[] }).ids;
    const codec = createBusinessNumberCodec(ORDER);
    expect(ids.map((t) => codec.decode(t))).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
    for (const t of ids) expect(t).toMatch(/^[0-9A-HJKMNP-TV-Z]{12}[0-9A-HJKMNP-TV-Z*~$=U]$/);
    // consecutive IDs do not look consecutive
    expect(new Set(ids.map((t) => t.slice(0, 4))).size).toBeGreaterThan(15);
    const leaf = await a.inject('/api/segment/get/order?format=order');
    expect(codec.decode(leaf.body)).toBe(21n);
  });

  it('key-less specs work, and an unknown format costs no IDs', async () => {
    const a = await setup();
    const r = await a.inject('/v1/segment/order?count=2&format=base62:4');
    expect((r.json() as { ids: string[] }).ids).toEqual(['0001', '0002']);
    const bad = await a.inject('/v1/segment/order?format=permuted-base32');
    expect(bad.statusCode).toBe(400);
    expect((await a.inject('/v1/segment/order')).json()).toEqual({ tag: 'order', ids: ['3'] });
  });
});
