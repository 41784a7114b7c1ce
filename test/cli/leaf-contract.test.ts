/**
 * Leaf's whole HTTP contract against a real server on SQLite (built CLI):
 * every error on the Leaf routes is text/plain `CODE: message` (405 and 404
 * included), tags like Leaf deployments' `order:pay` work in the server, the
 * CLI and the client under one rule, and Leaf's decode route answers Leaf's
 * JSON, checked against Leaf's own arithmetic (SnowflakeService.decodeSnowflakeId:
 * timestamp = (id >> 22) + 1288834974657, workerId = (id >> 12) ^ (id >> 22 << 10),
 * sequence = id ^ (id >> 12 << 12)).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { TAG_RULE } from '../../src/core/tag.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-leaf-'));
const env = { SEQUOIA_STORE: `sqlite:${join(dir, 'ids.db')}`, SEQUOIA_STATE_DIR: join(dir, 'cli-state') };
let server: ServerProcess;

beforeAll(async () => {
  expect(sequoia(['tag', 'create', 'order:pay', '--step', '100'], env).status).toBe(0);
  expect(sequoia(['tag', 'create', 'leaf:methods', '--step', '100'], env).status).toBe(0);
  server = await startServe(['--workers', '1', '--snowflake-layout', 'leaf', '--state-dir', join(dir, 'state')], {
    SEQUOIA_STORE: env.SEQUOIA_STORE,
  });
}, 30_000);
afterAll(() => server?.child.kill('SIGKILL'));

async function call(
  method: string,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; type: string; body: string; allow: string | null }> {
  const r = await fetch(server.url + path, { method, ...init });
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: await r.text(), allow: r.headers.get('allow') };
}

/** fetch refuses TRACE; node:http sends it. */
function trace(path: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(server.url + path, { method: 'TRACE' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Leaf's controller maps both ID routes with `@RequestMapping` and no method
 * (Spring Boot 1.5.18): every method but OPTIONS and TRACE takes an ID, the
 * body is never read, and Spring's trailing-slash match serves `…/{key}/`.
 */
describe("Leaf's ID routes take every method Leaf's mapping takes, with or without a trailing slash", () => {
  const form = { body: 'key=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  const json = { body: '{"key":"x"}', headers: { 'content-type': 'application/json' } };
  const other = { body: '<x/>', headers: { 'content-type': 'application/xml' } };
  const none = { body: 'raw' };
  const requests: [string, string, RequestInit][] = [];
  for (const slash of ['', '/']) {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) requests.push([method, slash, {}]);
    for (const body of [form, json, other, none]) requests.push(['POST', slash, body]);
  }

  it('the segment route hands out the next ID to each', async () => {
    const seen: string[] = [];
    for (const [method, slash, init] of requests) {
      const r = await call(method, `/api/segment/get/leaf:methods${slash}`, init);
      expect({ method, slash, status: r.status, type: r.type }).toEqual({ method, slash, status: 200, type: 'text/plain; charset=utf-8' });
      seen.push(r.body);
    }
    expect(seen).toEqual(requests.map((_, i) => String(i + 1)));
    // HEAD is answered as a GET without the body, and takes no ID (RFC 9110 §9.3.2; issue 40 item 8).
    const head = await call('HEAD', '/api/segment/get/leaf:methods/');
    expect(head.status).toBe(200);
    expect((await call('GET', '/api/segment/get/leaf:methods')).body).toBe(String(requests.length + 1));
  });

  it('the snowflake route hands out a new ID to each', async () => {
    const seen = new Set<string>();
    for (const [method, slash, init] of requests) {
      const r = await call(method, `/api/snowflake/get/order:pay${slash}`, init);
      expect({ method, slash, status: r.status }).toEqual({ method, slash, status: 200 });
      expect(r.body).toMatch(/^[1-9][0-9]*$/);
      seen.add(r.body);
    }
    expect(seen.size).toBe(requests.length);
  });

  it("OPTIONS answers Spring's Allow and takes no ID; TRACE is refused as Tomcat does", async () => {
    for (const path of [
      '/api/segment/get/leaf:methods',
      '/api/segment/get/leaf:methods/',
      '/api/snowflake/get/x',
      '/api/snowflake/get/x/',
    ]) {
      const r = await call('OPTIONS', path);
      expect({ path, status: r.status, allow: r.allow, body: r.body }).toEqual({
        path,
        status: 200,
        allow: 'GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS',
        body: '',
      });
      const t = await trace(path);
      expect({ path, status: t.status }).toEqual({ path, status: 405 });
      expect(t.type).toMatch(/^text\/plain/);
      expect(t.body).toMatch(/^METHOD_NOT_ALLOWED: \S/);
    }
    const before = Number((await call('GET', '/api/segment/get/leaf:methods')).body);
    await call('OPTIONS', '/api/segment/get/leaf:methods');
    await trace('/api/segment/get/leaf:methods');
    expect(Number((await call('GET', '/api/segment/get/leaf:methods')).body)).toBe(before + 1);
  });
});

describe('Leaf routes: every error is text/plain CODE: message', () => {
  const cases: [string, string, number, string][] = [
    ['POST', '/api/segment/get/nope', 404, 'TAG_NOT_FOUND'],
    ['DELETE', '/api/segment/get/bad%20tag/', 400, 'INVALID_ARGUMENT'],
    ['POST', '/api/segment/get/a/b', 404, 'NOT_FOUND'],
    ['PUT', '/api/decode/snowflakeId/', 400, 'INVALID_ARGUMENT'],
    ['GET', '/api/segment/get/nope', 404, 'TAG_NOT_FOUND'],
    ['GET', '/api/segment/get/', 400, 'INVALID_ARGUMENT'],
    ['GET', '/api/segment/get/a/b', 404, 'NOT_FOUND'],
    ['GET', '/api/segment/get/bad%20tag', 400, 'INVALID_ARGUMENT'],
    ['GET', '/api/decode/snowflakeId?snowflakeId=abc', 400, 'INVALID_ARGUMENT'],
    ['GET', '/api/decode/snowflakeId', 400, 'INVALID_ARGUMENT'],
    ['GET', '/api/decode/snowflakeId?snowflakeId=9223372036854775808', 400, 'INVALID_ARGUMENT'],
  ];
  for (const [method, path, status, code] of cases) {
    it(`${method} ${path} → ${status} ${code}`, async () => {
      const r = await call(method, path);
      expect(r.status).toBe(status);
      expect(r.type).toMatch(/^text\/plain/);
      expect(r.body).toMatch(new RegExp(`^${code}: \\S`));
    });
  }

  it('the JSON API keeps the JSON error shape', async () => {
    const r = await call('POST', '/v1/segment/order:pay');
    expect(r.status).toBe(405);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });
  });
});

describe("tags like Leaf's order:pay, one rule everywhere", () => {
  it('the server, the CLI and the client take them', async () => {
    const a = await call('GET', '/api/segment/get/order:pay');
    expect(a).toMatchObject({ status: 200, body: '1' });
    const b = JSON.parse((await call('GET', '/v1/segment/order:pay?count=2')).body) as { tag: string; ids: string[] };
    expect(b).toEqual({ tag: 'order:pay', ids: ['2', '3'] });
    const escaped = await call('GET', '/api/segment/get/order%3Apay');
    expect(escaped).toMatchObject({ status: 200, body: '4' });
    const client = createClient({ url: server.url });
    try {
      expect(String(await client.next('order:pay'))).toBe('5');
    } finally {
      await client.close();
    }
    const list = sequoia(['tag', 'list', '--json'], env);
    expect(JSON.parse(list.stdout)).toContainEqual(expect.objectContaining({ tag: 'order:pay' }));
  });

  it('a 129-character tag is refused by each with the same rule', async () => {
    const long = 'a'.repeat(129);
    const http = await call('GET', `/v1/segment/${long}`);
    expect(http.status).toBe(400);
    expect(JSON.parse(http.body).error.message).toBe(`tag ${TAG_RULE}`);
    const cli = sequoia(['tag', 'create', long], env);
    expect(cli.status).toBe(2);
    expect(cli.stderr).toContain(TAG_RULE);
    const client = createClient({ url: server.url });
    try {
      await expect(client.next(long)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: `tag ${TAG_RULE}` });
    } finally {
      await client.close();
    }
    expect(TAG_RULE).toContain('_.:-');
  });
});

describe("Leaf's decode route", () => {
  it("answers Leaf's JSON with Leaf's arithmetic, for IDs this server issued", async () => {
    for (let i = 0; i < 3; i++) {
      const id = (await call('GET', '/api/snowflake/get/order:pay')).body;
      const r = await call('GET', `/api/decode/snowflakeId?snowflakeId=${id}`);
      expect(r.status).toBe(200);
      expect(r.type).toMatch(/^application\/json/);
      const n = BigInt(id);
      const ms = (n >> 22n) + 1288834974657n;
      const iso = new Date(Number(ms)).toISOString();
      expect(JSON.parse(r.body)).toEqual({
        timestamp: `${ms}(${iso.slice(0, 10)} ${iso.slice(11, 23)})`,
        sequenceId: String(n ^ ((n >> 12n) << 12n)),
        workerId: String((n >> 12n) ^ ((n >> 22n) << 10n)),
      });
    }
  });

  it("takes the methods and the trailing slash of Leaf's mapping, and the ID from a form body as Spring's @RequestParam does", async () => {
    const id = ((1_000_000_000_000n << 22n) | (1023n << 12n) | 4095n).toString();
    const want = { timestamp: '2288834974657(2042-07-13 03:29:34.657)', sequenceId: '4095', workerId: '1023' };
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const path of ['/api/decode/snowflakeId', '/api/decode/snowflakeId/']) {
        const r = await call(method, `${path}?snowflakeId=${id}`);
        expect({ method, path, status: r.status, body: JSON.parse(r.body) as unknown }).toEqual({ method, path, status: 200, body: want });
      }
    }
    const form = await call('POST', '/api/decode/snowflakeId', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `snowflakeId=${id}`,
    });
    expect(JSON.parse(form.body)).toEqual(want);
    expect((await call('OPTIONS', '/api/decode/snowflakeId')).allow).toBe('GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS');
    const t = await trace('/api/decode/snowflakeId');
    expect(t.status).toBe(405);
    expect(t.body).toMatch(/^METHOD_NOT_ALLOWED: /);
  });

  it('decodes a fixed ID the same way', async () => {
    // tick 1000000000000 (2042-07-13T03:29:34.657Z), worker 1023, sequence 4095: every field at a boundary
    const id = ((1_000_000_000_000n << 22n) | (1023n << 12n) | 4095n).toString();
    expect(JSON.parse((await call('GET', `/api/decode/snowflakeId?snowflakeId=${id}`)).body)).toEqual({
      timestamp: '2288834974657(2042-07-13 03:29:34.657)',
      sequenceId: '4095',
      workerId: '1023',
    });
  });
});
