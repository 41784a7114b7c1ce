import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { ERROR_CODES } from '../core/errors.js';
import { MAX_ID } from '../core/id.js';
import { IdService } from '../service/id-service.js';
import { ControlledStore } from '../../test/helpers/fakes.js';
import { buildApp } from './build-app.js';
import { ERROR_STATUS } from './error-status.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function setup(opts: { adminToken?: string } = {}) {
  const store = new ControlledStore();
  const marks = new MemoryHighWaterMarkStore();
  const service = new IdService({ store, marks, refreshIntervalMs: 0, allocator: { loadTimeoutMs: 100, minRetryDelayMs: 50 } });
  await service.start();
  app = await buildApp({ service, adminToken: opts.adminToken });
  return { app, store, service, marks };
}

function expectError(res: { statusCode: number; json(): unknown; body: string }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  const body = res.json() as { error: { code: string; message: string } };
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(res.body).not.toMatch(/\bat .*\.(js|ts):\d+/); // no stack trace
}

describe('HTTP API', () => {
  it('Leaf route answers a decimal ID as text/plain', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 'leaf', start: '100' });
    const a = await app.inject('/api/segment/get/leaf');
    expect(a.statusCode).toBe(200);
    expect(a.headers['content-type']).toMatch(/^text\/plain/);
    expect(a.body).toBe('100');
    expect((await app.inject('/api/segment/get/leaf')).body).toBe('101');
  });

  it('Leaf route errors are text starting with the code, with the same statuses', async () => {
    const { app } = await setup();
    const r = await app.inject('/api/segment/get/none');
    expect(r.statusCode).toBe(404);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    expect(r.body).toMatch(/^TAG_NOT_FOUND: /);
    // a newcomer is told how to list and create tags
    expect(r.body).toContain('sequoia tag list');
    expect(r.body).toContain('sequoia tag create none');
    expect(((await app.inject('/v1/segment/none')).json() as { error: { message: string } }).error.message).toContain('POST /v1/tags');
    const bad = await app.inject('/api/segment/get/a%20b');
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(/^INVALID_ARGUMENT: /);
  });

  it('without the snowflake generator, its routes say so (Leaf text and JSON alike), not "no route"', async () => {
    const { app } = await setup(); // no snowflake service, as on a store that holds no leases
    const leaf = await app.inject('/api/snowflake/get/x');
    expect(leaf.statusCode).toBe(404);
    expect(leaf.body).toMatch(/^NOT_FOUND: the snowflake generator is not enabled on this server: .*--worker-id-provider/);
    for (const path of ['/v1/snowflake', '/v1/snowflake?count=3', '/v1/explain/123']) {
      const r = await app.inject(path);
      expectError(r, 404, 'NOT_FOUND');
      expect((r.json() as { error: { message: string } }).error.message, path).toMatch(/snowflake generator is not enabled/);
    }
  });

  it('/v1/segment gives count IDs as decimal strings, all distinct', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 'order', step: 7 });
    const r = await app.inject('/v1/segment/order?count=50');
    expect(r.statusCode).toBe(200);
    const body = r.json() as { tag: string; ids: string[] };
    expect(body.tag).toBe('order');
    expect(body.ids).toEqual(Array.from({ length: 50 }, (_, i) => String(i + 1)));
    const one = (await app.inject('/v1/segment/order')).json() as { ids: string[] };
    expect(one.ids).toEqual(['51']);
  });

  it('IDs above 2^53 travel exactly as strings', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 'big', step: 3, start: (MAX_ID - 3n).toString() });
    const body = (await app.inject('/v1/segment/big?count=3')).json() as { ids: string[] };
    expect(body.ids).toEqual([(MAX_ID - 3n).toString(), (MAX_ID - 2n).toString(), (MAX_ID - 1n).toString()]);
    expectError(await app.inject('/v1/segment/big'), 503, 'ID_SPACE_EXHAUSTED');
  });

  it.each(['0', '10001', '-1', '1.5', '1e3', 'abc', '', '00001'])('count=%s is INVALID_ARGUMENT', async (count) => {
    const { app, service } = await setup();
    await service.createTag({ tag: 't' });
    expectError(await app.inject(`/v1/segment/t?count=${count}`), 400, 'INVALID_ARGUMENT');
  });

  it('count=10000 works', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 't', step: 1000 });
    const ids = ((await app.inject('/v1/segment/t?count=10000')).json() as { ids: string[] }).ids;
    expect(new Set(ids).size).toBe(10000);
  });

  it('unknown routes are NOT_FOUND and wrong methods METHOD_NOT_ALLOWED, as JSON', async () => {
    const { app } = await setup();
    expectError(await app.inject('/nope'), 404, 'NOT_FOUND');
    expectError(await app.inject({ method: 'DELETE', url: '/v1/segment/x' }), 405, 'METHOD_NOT_ALLOWED');
    expectError(await app.inject({ method: 'PUT', url: '/v1/tags' }), 405, 'METHOD_NOT_ALLOWED');
  });

  it('tag admin: create, duplicate, get, list, update, fence, delete', async () => {
    const { app } = await setup();
    const c = await app.inject({ method: 'POST', url: '/v1/tags', payload: { tag: 'pay', step: 10, start: '5', description: 'payments' } });
    expect(c.statusCode).toBe(201);
    expect(c.json()).toMatchObject({ tag: 'pay', maxId: '5', step: 10, description: 'payments' });
    expectError(await app.inject({ method: 'POST', url: '/v1/tags', payload: { tag: 'pay' } }), 409, 'TAG_EXISTS');
    expect((await app.inject('/v1/tags/pay')).json()).toMatchObject({ tag: 'pay' });
    expect(((await app.inject('/v1/tags')).json() as { tags: unknown[] }).tags).toHaveLength(1);
    expect((await app.inject({ method: 'PATCH', url: '/v1/tags/pay', payload: { step: 20 } })).json()).toMatchObject({ step: 20 });
    expect((await app.inject('/api/segment/get/pay')).body).toBe('5');
    const f = await app.inject({ method: 'POST', url: '/v1/tags/pay/fence', payload: { to: '1000' } });
    expect(f.json()).toMatchObject({ maxId: '1000', fenceEpoch: 1 });
    expect((await app.inject({ method: 'DELETE', url: '/v1/tags/pay' })).statusCode).toBe(204);
    expectError(await app.inject('/v1/tags/pay'), 404, 'TAG_NOT_FOUND');
    expectError(
      await app
        .inject('/api/segment/get/pay')
        .then((r) => ({ ...r, json: () => ({ error: { code: r.body.split(':')[0], message: r.body } }) })),
      404,
      'TAG_NOT_FOUND',
    );
  });

  it('malformed bodies are INVALID_ARGUMENT naming the field', async () => {
    const { app } = await setup();
    const bad = await app.inject({ method: 'POST', url: '/v1/tags', headers: { 'content-type': 'application/json' }, payload: '{nope' });
    expectError(bad, 400, 'INVALID_ARGUMENT');
    const r = await app.inject({ method: 'POST', url: '/v1/tags', payload: { tag: 'x', step: 'ten' } });
    expectError(r, 400, 'INVALID_ARGUMENT');
    expect(r.body).toMatch(/step/);
    expectError(await app.inject({ method: 'POST', url: '/v1/tags', payload: { tag: 'x', start: '-1' } }), 400, 'INVALID_ARGUMENT');
    expectError(await app.inject({ method: 'POST', url: '/v1/tags', payload: { tag: 'x', extra: 1 } }), 400, 'INVALID_ARGUMENT');
    expectError(await app.inject({ method: 'POST', url: '/v1/tags/x/fence', payload: { to: 1.5 } }), 400, 'INVALID_ARGUMENT');
    const proto = await app.inject({
      method: 'POST',
      url: '/v1/tags',
      headers: { 'content-type': 'application/json' },
      payload: '{"tag":"y","__proto__":{"a":1}}',
    });
    expect(proto.statusCode).toBe(400);
    // says what was refused and why, not "not valid JSON"
    expect(proto.json()).toEqual({
      error: {
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/^the body has the key __proto__: refused, because such a key can change object prototypes/),
      },
    });
    const ctor = await app.inject({
      method: 'POST',
      url: '/v1/tags',
      headers: { 'content-type': 'application/json' },
      payload: '{"tag":"y","constructor":{"prototype":{"a":1}}}',
    });
    expect(ctor.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('constructor.prototype') } });
    expect(bad.json()).toMatchObject({ error: { message: expect.stringContaining('not valid JSON') } });
    const empty = await app.inject({ method: 'POST', url: '/v1/tags', headers: { 'content-type': 'application/json' }, payload: '' });
    expectError(empty, 400, 'INVALID_ARGUMENT');
  });

  it('__proto__ and constructor are ordinary tags', async () => {
    const { app } = await setup();
    for (const tag of ['__proto__', 'constructor']) {
      expect((await app.inject({ method: 'POST', url: '/v1/tags', payload: JSON.parse(`{"tag":"${tag}"}`) })).statusCode).toBe(201);
      expect((await app.inject(`/api/segment/get/${tag}`)).body).toBe('1');
      expect((await app.inject(`/v1/tags/${tag}`)).json()).toMatchObject({ tag });
    }
  });

  it('admin token: UNAUTHORIZED without it, FORBIDDEN when wrong, ID routes stay open', async () => {
    const { app, service } = await setup({ adminToken: 'secret-token' });
    await service.createTag({ tag: 't' });
    expectError(await app.inject('/v1/tags'), 401, 'UNAUTHORIZED');
    expectError(await app.inject({ url: '/v1/tags', headers: { authorization: 'Bearer wrong' } }), 403, 'FORBIDDEN');
    expectError(await app.inject({ method: 'POST', url: '/v1/tags/t/fence', payload: { to: '9' } }), 401, 'UNAUTHORIZED');
    expect((await app.inject({ url: '/v1/tags', headers: { authorization: 'Bearer secret-token' } })).statusCode).toBe(200);
    expect((await app.inject('/api/segment/get/t')).statusCode).toBe(200);
  });

  it('store down with both segments empty: 503 SEGMENTS_EXHAUSTED with Retry-After; readyz 503; both recover', async () => {
    const { app, service, store } = await setup();
    await service.createTag({ tag: 't', step: 2 });
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    store.down = true;
    const r = await app.inject('/v1/segment/t');
    expectError(r, 503, 'SEGMENTS_EXHAUSTED');
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expectError(await app.inject('/readyz'), 503, 'STORE_UNAVAILABLE');
    store.down = false;
    await new Promise((res) => setTimeout(res, 120));
    expect((await app.inject('/v1/segment/t')).json()).toEqual({ tag: 't', ids: ['1'] });
    expect((await app.inject('/readyz')).statusCode).toBe(200);
  });

  it('a rolled-back store is refused with STORE_ROLLBACK_DETECTED until fenced over HTTP', async () => {
    const { app, service, store } = await setup();
    await service.createTag({ tag: 't', step: 5 });
    await app.inject('/v1/segment/t?count=8');
    await service.close();
    store.restore('t', 1n);
    const service2 = new IdService({
      store,
      marks: (service as unknown as { marks: MemoryHighWaterMarkStore }).marks,
      refreshIntervalMs: 0,
    });
    await service2.start();
    const app2 = await buildApp({ service: service2 });
    try {
      expectError(await app2.inject('/v1/segment/t'), 503, 'STORE_ROLLBACK_DETECTED');
      expectError(await app2.inject({ method: 'POST', url: '/v1/tags/t/fence', payload: { to: '3' } }), 400, 'INVALID_ARGUMENT');
      expect((await app2.inject({ method: 'POST', url: '/v1/tags/t/fence', payload: { to: '100' } })).statusCode).toBe(200);
      expect((await app2.inject('/v1/segment/t')).json()).toEqual({ tag: 't', ids: ['100'] });
    } finally {
      await app2.close();
    }
  });

  it('an unexpected failure is INTERNAL with a request id and no internals', async () => {
    const { app, store } = await setup();
    store.listTags = async () => {
      throw new Error('SELECT * FROM secret_table failed at /srv/app/x.js:1:1');
    };
    const r = await app.inject('/v1/tags');
    expectError(r, 500, 'INTERNAL');
    expect(r.body).toMatch(/request id/);
    expect(r.body).not.toMatch(/secret_table|\/srv/);
  });

  it('healthz, status', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 's', step: 100 });
    await app.inject('/v1/segment/s?count=20');
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    const st = (await app.inject('/v1/status')).json() as { tags: Array<Record<string, unknown>> };
    // 20 of 100 used: the next segment (doubled step) was prefetched
    expect(st.tags[0]).toMatchObject({
      tag: 's',
      current: { start: '1', end: '101', next: '21' },
      next: { start: '101', end: '301' },
      nextReady: true,
      remaining: 80 + 200,
    });
  });

  it('snowflake routes answer an error, never a placeholder ID, while the generator is off', async () => {
    const { app } = await setup();
    const r = await app.inject('/api/snowflake/get/x');
    expect(r.statusCode).toBeGreaterThanOrEqual(400);
    expect(r.body).not.toMatch(/^-?\d+$/);
  });

  it('every error code has an HTTP status', () => {
    for (const code of ERROR_CODES) expect(ERROR_STATUS[code]).toBeGreaterThanOrEqual(400);
  });
});
