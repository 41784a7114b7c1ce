import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { IdService } from '../service/id-service.js';
import { ControlledStore } from '../../test/helpers/fakes.js';
import { type AppOptions, buildApp } from './build-app.js';
import { hooksSkippedByFastPath } from './fast-path.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function serve(extra: Partial<AppOptions> = {}, before?: (app: FastifyInstance) => Promise<void>) {
  const store = new ControlledStore();
  const service = new IdService({ store, marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0, allocator: { loadTimeoutMs: 100 } });
  await service.start();
  await service.createTag({ tag: 't', step: 10 });
  app = await buildApp({ service, metrics: false, ...extra });
  await before?.(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  return { url, store, service };
}

const get = async (url: string, init?: RequestInit) => {
  const r = await fetch(url, init);
  return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
};

describe('HTTP fast path (real sockets)', () => {
  it('answers the hot routes exactly as the fastify routes do, and IDs continue across both', async () => {
    const { url } = await serve();
    // first use goes through fastify (the tag is loaded), later ones through the fast path
    expect(await get(`${url}/api/segment/get/t`)).toEqual({ status: 200, type: 'text/plain; charset=utf-8', body: '1' });
    expect(await get(`${url}/api/segment/get/t`)).toEqual({ status: 200, type: 'text/plain; charset=utf-8', body: '2' });
    expect(await get(`${url}/v1/segment/t?count=3`)).toEqual({
      status: 200,
      type: 'application/json; charset=utf-8',
      body: '{"tag":"t","ids":["3","4","5"]}',
    });
    expect(JSON.parse((await get(`${url}/v1/segment/t`)).body)).toEqual({ tag: 't', ids: ['6'] });
    // a count beyond what is buffered falls through to fastify, which loads more: nothing lost, nothing repeated
    const big = JSON.parse((await get(`${url}/v1/segment/t?count=50`)).body) as { ids: string[] };
    expect(big.ids).toEqual(Array.from({ length: 50 }, (_, i) => String(i + 7)));
    // ?format= is fastify's: IDs 57 and 58 in base62, width 3
    expect((await get(`${url}/v1/segment/t?count=2&format=base62:3`)).body).toBe('{"tag":"t","ids":["00v","00w"]}');
  });

  it('leaves every other case to fastify: errors keep their shape', async () => {
    const { url } = await serve();
    await get(`${url}/api/segment/get/t`);
    const unknown = await get(`${url}/api/segment/get/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatch(/^TAG_NOT_FOUND: /);
    expect((await get(`${url}/v1/segment/t?count=0`)).status).toBe(400);
    expect((await get(`${url}/v1/segment/t?count=10001`)).status).toBe(400);
    expect((await get(`${url}/v1/segment/t?count=1&x=1`)).status).toBe(200);
    expect((await get(`${url}/api/segment/get/a%20b`)).status).toBe(400);
    expect((await fetch(`${url}/api/segment/get/t`, { method: 'HEAD' })).status).toBe(200);
    // Leaf's mapping takes POST and a trailing slash (leaf-id-route.ts): fastify serves them, from the same buffer
    expect((await get(`${url}/api/segment/get/t`, { method: 'POST' })).status).toBe(200);
    expect((await get(`${url}/api/segment/get/t/`)).status).toBe(200);
    expect((await get(`${url}/v1/segment/t`, { method: 'POST' })).status).toBe(405);
  });

  it('store down with the buffer empty: the error comes from fastify (503 with Retry-After)', async () => {
    const { url, store } = await serve();
    await get(`${url}/api/segment/get/t`);
    store.down = true;
    let last = { status: 200, type: '', body: '' as string };
    for (let i = 0; i < 30 && last.status === 200; i++) last = (await get(`${url}/v1/segment/t`)) as typeof last;
    expect(last.status).toBe(503);
    expect(JSON.parse(last.body)).toMatchObject({ error: { code: 'SEGMENTS_EXHAUSTED' } });
  });

  it('with client tokens and a rate limit: serves only callers whose token grants the tag, each request charged once', async () => {
    const token = 'client-token-0123456789';
    const { url, service } = await serve({
      clientTokens: [
        { token, tags: ['t'] },
        { token: 'other-token-0123456789', tags: ['x'] },
      ],
      rateLimit: { perSecond: 0.001, burst: 4 },
    });
    let fast = 0;
    const take = service.takeBuffered.bind(service);
    service.takeBuffered = (tag) => {
      const v = take(tag);
      if (v !== undefined) fast++;
      return v;
    };
    const auth = { headers: { authorization: `Bearer ${token}` } };
    expect((await get(`${url}/api/segment/get/t`, auth)).body).toBe('1'); // loads the tag (fastify)
    expect((await get(`${url}/api/segment/get/t`, auth)).body).toBe('2'); // fast path
    expect(fast).toBe(1);
    // more than is buffered: the fast path charges it, then hands it to fastify, which does not charge again
    expect(JSON.parse((await get(`${url}/v1/segment/t?count=50`, auth)).body).ids).toHaveLength(50);
    expect((await get(`${url}/api/segment/get/t`, auth)).body).toBe('53');
    expect(fast).toBe(2);
    const limited = await get(`${url}/api/segment/get/t`, auth);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatch(/^RATE_LIMITED: /);
    // refusals are fastify's, in the contract's shape: no token, a token without the tag
    expect((await get(`${url}/api/segment/get/t`)).status).toBe(401);
    expect((await get(`${url}/api/segment/get/t`, { headers: { authorization: 'Bearer other-token-0123456789' } })).body).toMatch(
      /^FORBIDDEN: /,
    );
    expect(fast).toBe(2);
  });
});

describe('fast path guard', () => {
  // As a CORS plugin registers: one that is not encapsulated (fastify-plugin's skip-override), so its hook covers every route.
  const cors = (a: FastifyInstance) =>
    a.register(
      Object.assign(
        async (i: FastifyInstance) => {
          i.addHook('onRequest', function allowOrigin(_req, reply, done) {
            void reply.header('access-control-allow-origin', '*');
            done();
          });
        },
        { [Symbol.for('skip-override')]: true },
      ),
    );

  it('the app as built has no request hook on the fast-path routes', async () => {
    await serve();
    expect(hooksSkippedByFastPath(app!)).toEqual([]);
  });

  it('sees a request hook (say CORS) that the fast path would skip', async () => {
    await serve({}, async (a) => void (await cors(a)));
    expect(hooksSkippedByFastPath(app!)).toEqual([
      '/api/segment/get/:tag onRequest ["allowOrigin()"]',
      '/v1/segment/:tag onRequest ["allowOrigin()"]',
    ]);
  });

  it('a hook registered after buildApp runs on every hot request: the fast path turns itself off', async () => {
    const { url } = await serve({}, async (a) => void (await cors(a)));
    // Without the guard, the first request loads the tag through fastify and the next ones skip the hook.
    for (const path of ['/api/segment/get/t', '/api/segment/get/t', '/v1/segment/t', '/v1/segment/t?count=2']) {
      expect((await fetch(`${url}${path}`)).headers.get('access-control-allow-origin'), path).toBe('*');
    }
  });

  it('a hook inside an encapsulated plugin without hot routes leaves the fast path on', async () => {
    const { url } = await serve({}, async (a) => {
      await a.register(async (child) => {
        child.addHook('onRequest', function childOnly(_q, _r, done) {
          done();
        });
        child.get('/elsewhere', async () => 'ok');
      });
    });
    expect(hooksSkippedByFastPath(app!)).toEqual([]);
    expect(await get(`${url}/elsewhere`)).toMatchObject({ status: 200 });
  });
});
