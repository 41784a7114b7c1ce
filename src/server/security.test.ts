import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { ERROR_CODES } from '../core/errors.js';
import { IdService } from '../service/id-service.js';
import { type AppOptions, buildApp } from './build-app.js';
import { TokenBucketLimiter } from './rate-limit.js';

const ADMIN = 'admin-token-xyz';
const TEAM_A = 'team-a-token-0123456789';
const TEAM_ALL = 'team-all-token-0123456789';
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function setup(extra: Partial<AppOptions> = {}) {
  const service = new IdService({ store: new MemorySegmentStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  for (const tag of ['a', 'b']) await service.createTag({ tag });
  app = await buildApp({ service, metrics: false, ...extra });
  return app;
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const code = (r: { json(): unknown }) => (r.json() as { error: { code: string } }).error.code;

describe('client tokens', () => {
  const tokens = {
    adminToken: ADMIN,
    clientTokens: [
      { token: TEAM_A, tags: ['a'] },
      { token: TEAM_ALL, tags: ['*'] },
    ],
  };

  it('ID routes need a token granting the tag: 401 without, 403 with the wrong one', async () => {
    const a = await setup(tokens);
    expect((await a.inject('/v1/segment/a')).statusCode).toBe(401);
    expect(code(await a.inject('/v1/segment/a'))).toBe('UNAUTHORIZED');
    expect((await a.inject({ url: '/v1/segment/a', headers: bearer('nope-nope-nope-nope') })).statusCode).toBe(403);
    expect((await a.inject({ url: '/v1/segment/a', headers: bearer(TEAM_A) })).statusCode).toBe(200);
    const other = await a.inject({ url: '/v1/segment/b', headers: bearer(TEAM_A) });
    expect(other.statusCode).toBe(403);
    expect(code(other)).toBe('FORBIDDEN');
    // no enumeration: a tag that does not exist answers the same 403
    expect((await a.inject({ url: '/v1/segment/zzz', headers: bearer(TEAM_A) })).statusCode).toBe(403);
    expect((await a.inject({ url: '/api/segment/get/b', headers: bearer(TEAM_A) })).body).toMatch(/^FORBIDDEN: /);
    expect((await a.inject({ url: '/v1/segment/b', headers: bearer(TEAM_ALL) })).statusCode).toBe(200);
    expect((await a.inject({ url: '/v1/segment/b', headers: bearer(ADMIN) })).statusCode).toBe(200);
    expect((await a.inject('/v1/uuid')).statusCode).toBe(401);
    expect((await a.inject({ url: '/v1/uuid', headers: bearer(TEAM_A) })).statusCode).toBe(200);
  });

  it('a client token is not an admin token, and tokens never show up in answers', async () => {
    const a = await setup(tokens);
    const r = await a.inject({ url: '/v1/tags', headers: bearer(TEAM_ALL) });
    expect(r.statusCode).toBe(403);
    expect(r.body).not.toContain(TEAM_ALL);
    expect((await a.inject({ url: '/v1/tags', headers: bearer(ADMIN) })).statusCode).toBe(200);
    expect((await a.inject({ url: '/v1/tags', headers: { authorization: 'Basic abc' } })).statusCode).toBe(403);
  });

  it('without client tokens the ID routes stay open', async () => {
    const a = await setup({ adminToken: ADMIN });
    expect((await a.inject('/v1/segment/a')).statusCode).toBe(200);
  });
});

describe('rate limit', () => {
  it('token bucket: burst, then 429 RATE_LIMITED with Retry-After, per client', async () => {
    const a = await setup({ rateLimit: { perSecond: 1, burst: 3 }, clientTokens: [{ token: TEAM_A, tags: ['*'] }] });
    for (let i = 0; i < 3; i++) expect((await a.inject({ url: '/v1/segment/a', headers: bearer(TEAM_A) })).statusCode).toBe(200);
    const r = await a.inject({ url: '/v1/segment/a', headers: bearer(TEAM_A) });
    expect(r.statusCode).toBe(429);
    expect(code(r)).toBe('RATE_LIMITED');
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // a token that matches nothing is no client of its own: it shares its address's bucket
    expect((await a.inject({ url: '/v1/segment/a', headers: bearer('someone-else-entirely') })).statusCode).toBe(403);
  });

  it('refills at the configured rate and forgets the least recent clients past its bound', () => {
    let t = 0;
    const l = new TokenBucketLimiter(10, 2, () => t, 2);
    l.take('x');
    l.take('x');
    expect(() => l.take('x')).toThrow(/too many/);
    t += 100; // one token back at 10/s
    l.take('x');
    expect(() => l.take('x')).toThrow();
    l.take('y');
    l.take('z'); // evicts x, the least recently seen
    l.take('x');
    l.take('x');
  });
});

async function listen(a: FastifyInstance): Promise<number> {
  await a.listen({ port: 0, host: '127.0.0.1' });
  const addr = a.server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}

function raw(port: number, payload: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => (out += d.toString()));
    s.on('end', () => resolve(out));
    s.on('error', reject);
    s.write(payload);
  });
}

describe('limits at the HTTP layer', () => {
  it('an oversized head gets 431 and a malformed request 400, both in the error shape', async () => {
    const a = await setup({ maxHeaderBytes: 2048 });
    const port = await listen(a);
    const big = await raw(port, `GET /v1/segment/a HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(5000)}\r\n\r\n`);
    expect(big).toMatch(/^HTTP\/1\.1 431/);
    expect(big).toMatch(/"code":"INVALID_ARGUMENT"/);
    const bad = await raw(port, 'NONSENSE\r\n\r\n');
    expect(bad).toMatch(/^HTTP\/1\.1 400/);
    expect(bad).toMatch(/"code":"INVALID_ARGUMENT"/);
    // still serving
    const ok = await fetch(`http://127.0.0.1:${port}/v1/segment/a`);
    expect(ok.status).toBe(200);
  });

  it('a body over the limit is refused', async () => {
    const a = await setup();
    const r = await a.inject({ method: 'POST', url: '/v1/tags', payload: { tag: 'x', description: 'd'.repeat(20_000) } });
    expect(r.statusCode).toBe(413);
    expect(code(r)).toBe('INVALID_ARGUMENT');
  });
});

describe('TLS', () => {
  it('serves HTTPS with the given certificate and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: 'ignore' },
    );
    // With a connection cap of 1: the cap's listener hands admitted connections to the TLS server's own.
    const a = await setup({
      tls: { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) },
      maxConnections: 1,
    });
    const port = await listen(a);
    const get = () =>
      new Promise<string>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port,
            path: '/v1/segment/a',
            ca: readFileSync(join(dir, 'cert.pem')),
            servername: 'localhost',
            agent: false,
          },
          (res) => {
            let d = '';
            res.on('data', (c) => (d += c));
            res.on('end', () => resolve(d));
          },
        );
        req.on('error', reject);
        req.end();
      });
    expect(JSON.parse(await get())).toEqual({ tag: 'a', ids: ['1'] });
    // Over the cap on TLS: reset, not a plain-text answer the TLS client could not read.
    const holder = connect({ host: '127.0.0.1', port });
    await new Promise((r) => holder.once('connect', r));
    await expect(get()).rejects.toMatchObject({ code: expect.stringMatching(/^(ECONNRESET|EPIPE)$/) });
    holder.destroy();
    await expect.poll(async () => get().catch(() => ''), { timeout: 10_000 }).toContain('"tag":"a"');
  });
});

describe('HTTP fuzz', () => {
  const methods = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS');
  const seg = fc.oneof(
    fc.constantFrom(
      'v1',
      'api',
      'segment',
      'get',
      'tags',
      'uuid',
      'a',
      'b',
      '__proto__',
      'constructor',
      'fence',
      'status',
      'healthz',
      'readyz',
      '..',
      '%00',
      '%2e%2e',
      '%ZZ',
    ),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
  );
  const path = fc.array(seg, { minLength: 0, maxLength: 5 }).map((p) => `/${p.join('/')}`);
  const query = fc.option(
    fc.array(
      fc.tuple(
        fc.constantFrom('count', 'format', 'version', 'layout', 'x', '__proto__'),
        fc.oneof(
          fc.constantFrom('0', '1', '10000', '10001', '-1', '1e3', '1.5', 'NaN', '9'.repeat(30), 'base62', 'order', '7', '4'),
          fc.string({ maxLength: 8 }),
        ),
      ),
      { maxLength: 3 },
    ),
  );
  const body = fc.option(
    fc.oneof(fc.json(), fc.string({ maxLength: 40 }), fc.constant('{"tag":"zz","step":1e400}'), fc.constant('{"__proto__":{"x":1}}')),
  );
  const headers = fc.record({
    'content-type': fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=utf-8',
      '',
    ),
    authorization: fc.constantFrom('', 'Bearer x', 'Bearer admin-token-xyz', 'Basic zzz', 'Bearer '),
  });

  it('every answer is well-formed, 4xx carry JSON codes, and the server keeps issuing correct IDs', async () => {
    const a = await setup({ adminToken: ADMIN });
    await fc.assert(
      fc.asyncProperty(methods, path, query, headers, body, async (method, p, q, h, b) => {
        const url = q ? `${p}?${q.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}` : p;
        const hdrs: Record<string, string> = {};
        for (const [k, v] of Object.entries(h)) if (v) hdrs[k] = v;
        const r = await a.inject({
          method: method as 'GET',
          url,
          headers: hdrs,
          ...(b !== null && method !== 'GET' && method !== 'HEAD' ? { payload: b } : {}),
        });
        expect(r.statusCode).toBeGreaterThanOrEqual(200);
        expect(r.statusCode).toBeLessThan(600);
        expect(r.statusCode).not.toBe(500);
        expect(r.body).not.toMatch(/\n\s+at .+:\d+:\d+/);
        if (r.statusCode >= 400 && method !== 'HEAD') {
          if ((r.headers['content-type'] ?? '').toString().startsWith('text/plain')) {
            expect(ERROR_CODES).toContain(r.body.split(':')[0]);
          } else {
            expect(ERROR_CODES).toContain(code(r));
          }
        }
      }),
      { numRuns: 400 },
    );
    // afterwards: IDs still come, unique and in order
    const ids = ((await a.inject('/v1/segment/a?count=5')).json() as { ids: string[] }).ids.map(Number);
    const more = ((await a.inject('/v1/segment/a?count=5')).json() as { ids: string[] }).ids.map(Number);
    expect(new Set([...ids, ...more]).size).toBe(10);
    expect(more[0]).toBeGreaterThan(ids[4]!);
  });
});
