import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../../adapters/memory/memory-high-water-mark-store.js';
import { dayStamp, parseDailyNumber } from '../../core/business-number/daily-number.js';
import { IdService } from '../../service/id-service.js';
import { type AppOptions, buildApp } from '../build-app.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function setup(o: Partial<AppOptions> = {}) {
  const service = new IdService({ store: new MemorySegmentStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  // Base tags are an admin's to make; the route makes only their day tags.
  for (const tag of ['ORD', 'PAY']) await service.createTag({ tag });
  app = await buildApp({ service, metrics: false, ...o });
  return { app, service };
}

const code = (r: { json: () => unknown }) => (r.json() as { error: { code: string } }).error.code;

describe('GET /v1/daily/{tag}', () => {
  it('gives count numbers of today in the time zone, from counter 1, with a check symbol on request', async () => {
    const { app: a, service } = await setup();
    const before = Date.now();
    const r = await a.inject('/v1/daily/ORD?timeZone=asia/shanghai&count=3');
    const days = [dayStamp(before, 'Asia/Shanghai'), dayStamp(Date.now(), 'Asia/Shanghai')];
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = r.json() as { tag: string; timeZone: string; day: string; ids: string[] };
    expect(days).toContain(body.day);
    expect(body).toEqual({ tag: 'ORD', timeZone: 'Asia/Shanghai', day: body.day, ids: [1, 2, 3].map((n) => `${body.day}-00000${n}`) });
    expect((await service.listTags()).map((t) => t.tag).filter((t) => t.startsWith('ORD'))).toEqual(['ORD', `ORD:${body.day}`]);
    const checked = (await a.inject('/v1/daily/ORD?timeZone=Asia/Shanghai&digits=4&check=1')).json() as { ids: string[] };
    // Another format of the same base tag draws from the same day counter: never the same counter twice.
    expect(parseDailyNumber(checked.ids[0]!, { digits: 4, check: true })).toEqual({ day: body.day, counter: 4n });
  });

  it('answers 404 TAG_NOT_FOUND for a base tag nobody created, and makes no tag', async () => {
    const { app: a, service } = await setup();
    const before = (await service.listTags()).map((t) => t.tag);
    for (let i = 0; i < 2; i++) {
      const r = await a.inject('/v1/daily/NOSUCH?timeZone=UTC');
      expect([r.statusCode, code(r)]).toEqual([404, 'TAG_NOT_FOUND']);
      expect((r.json() as { error: { message: string } }).error.message).toMatch(/create it first/);
    }
    expect((await service.listTags()).map((t) => t.tag)).toEqual(before);
    await service.createTag({ tag: 'NOSUCH' });
    expect((await a.inject('/v1/daily/NOSUCH?timeZone=UTC')).statusCode).toBe(200);
  });

  it('refuses bad parameters with 400 INVALID_ARGUMENT, taking no number', async () => {
    const { app: a, service } = await setup();
    for (const q of [
      'ORD',
      'ORD?timeZone=',
      'ORD?timeZone=Mars/Base',
      'ORD?timeZone=UTC&digits=0',
      'ORD?timeZone=UTC&digits=13',
      'ORD?timeZone=UTC&digits=x',
      'ORD?timeZone=UTC&check=yes',
      'ORD?timeZone=UTC&count=0',
      'ORD?timeZone=UTC&count=10001',
      `${'a'.repeat(125)}?timeZone=UTC`,
      'bad%20tag?timeZone=UTC',
      'ORD?timeZone=UTC&timeZone=Asia/Shanghai',
      'ORD?timeZone=UTC&digits=4&digits=5',
      'ORD?timeZone=UTC&check=1&check=1',
    ]) {
      const r = await a.inject(`/v1/daily/${q}`);
      expect([q, r.statusCode, code(r)]).toEqual([q, 400, 'INVALID_ARGUMENT']);
      expect((r.json() as { error: { message: string } }).error.message).not.toMatch(/\n\s+at /);
    }
    expect((await service.listTags()).map((t) => t.tag)).toEqual(['ORD', 'PAY']);
    expect((await a.inject({ method: 'POST', url: '/v1/daily/ORD?timeZone=UTC' })).statusCode).toBe(405);
  });

  it('HEAD takes no number', async () => {
    const { app: a } = await setup();
    for (let i = 0; i < 5; i++) {
      const h = await a.inject({ method: 'HEAD', url: '/v1/daily/ORD?timeZone=UTC&count=100' });
      expect([h.statusCode, h.body]).toEqual([200, '']);
    }
    expect((await a.inject({ method: 'HEAD', url: '/v1/daily/ORD?timeZone=Nowhere' })).statusCode).toBe(400);
    const ids = ((await a.inject('/v1/daily/ORD?timeZone=UTC')).json() as { ids: string[] }).ids;
    expect(ids[0]).toMatch(/^[0-9]{8}-000001$/);
  });

  it("answers 503 ID_SPACE_EXHAUSTED once the day's counter needs more digits than asked for", async () => {
    const { app: a } = await setup();
    const r = await a.inject('/v1/daily/ORD?timeZone=UTC&digits=1&count=9');
    expect((r.json() as { ids: string[] }).ids.at(-1)).toMatch(/-9$/);
    const over = await a.inject('/v1/daily/ORD?timeZone=UTC&digits=1');
    expect([over.statusCode, code(over)]).toEqual([503, 'ID_SPACE_EXHAUSTED']);
  });

  it('needs a client token granting the base tag when client tokens are configured', async () => {
    const { app: a } = await setup({ clientTokens: [{ token: 'token-for-ord-0123456789', tags: ['ORD'] }] });
    const get = (token?: string) =>
      a.inject({ url: '/v1/daily/ORD?timeZone=UTC', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    expect(code(await get())).toBe('UNAUTHORIZED');
    const other = await a.inject({ url: '/v1/daily/PAY?timeZone=UTC', headers: { authorization: 'Bearer token-for-ord-0123456789' } });
    expect([other.statusCode, code(other)]).toEqual([403, 'FORBIDDEN']);
    expect((await get('token-for-ord-0123456789')).statusCode).toBe(200);
  });
});
