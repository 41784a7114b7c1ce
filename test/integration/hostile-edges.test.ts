/**
 * Issue 14, "hostile edges", against the built `sequoia serve` on a real
 * SQLite store over real sockets: rate limits keyed by an identity the caller
 * cannot mint, per-client unknown-tag look-ups that never blank out a real
 * tag, tag detail behind a token, and a complete answer in the contract's
 * shape for requests Node or fastify would otherwise drop or answer bare.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { contractProblem, parseResponses, rawExchange, type RawResponse } from '../helpers/raw-http.js';

const ADMIN = 'admin-token-0123456789';
const ORDERS = 'orders-token-0123456789';
const BILLING = 'billing-token-0123456789';
const SCRAPER = 'metrics-token-0123456789';
const CLIENT_TOKENS = JSON.stringify([
  { token: ORDERS, tags: ['*'], name: 'orders' },
  { token: BILLING, tags: ['*'], name: 'billing' },
]);

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) {
    s.child.kill('SIGKILL');
    await s.exited;
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A fresh store and state dir with `tags` created before the server starts. */
function freshStore(tags: string[]): { store: string; stateDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-hostile-'));
  dirs.push(dir);
  const store = `sqlite:${join(dir, 'ids.db')}`;
  for (const t of tags) {
    const r = sequoia(['tag', 'create', t, '--store', store]);
    if (r.status !== 0) throw new Error(`tag create ${t}: ${r.stderr}`);
  }
  return { store, stateDir: join(dir, 'state') };
}

async function serve(tags: string[], args: string[]): Promise<{ s: ServerProcess; port: number; store: string }> {
  const { store, stateDir } = freshStore(tags);
  const s = await startServe(['--workers', '1', '--store', store, '--state-dir', stateDir, ...args]);
  servers.push(s);
  return { s, port: Number(new URL(s.url).port), store };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One GET on a new connection, from `localAddress` when given (any 127.0.0.0/8 address is this machine). */
function get(port: number, path: string, headers: Record<string, string> = {}, localAddress?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false, ...(localAddress ? { localAddress } : {}) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const codeOf = (a: Answer): string =>
  a.body.startsWith('{') ? (JSON.parse(a.body) as { error: { code: string } }).error.code : (a.body.split(':')[0] ?? '');

/**
 * Sends `n` requests one after another; returns how many were let through
 * (not 429) and how many a bucket of `burst` refilled at `rate`/s could have
 * let through in the time they took (the machine is shared: timing varies).
 */
async function drain(
  n: number,
  send: (i: number) => Promise<Answer>,
  burst: number,
  rate: number,
): Promise<{ passed: number; allowed: number; statuses: number[] }> {
  const t0 = performance.now();
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await send(i)).status);
  const allowed = burst + Math.ceil(((performance.now() - t0) / 1000) * rate);
  return { passed: statuses.filter((x) => x !== 429).length, allowed, statuses };
}

describe('rate limit: no bucket for a made-up token', () => {
  it('a new junk token on every request buys no new bucket: its address is limited', async () => {
    const { port: p } = await serve(['t'], ['--rate-limit', '1', '--rate-limit-burst', '5']);
    const r = await drain(30, (i) => get(p, '/v1/segment/t', bearer(`junk${i}`), '127.0.0.11'), 5, 1);
    expect(r.statuses.slice(0, 5)).toEqual(Array(5).fill(200));
    expect(r.passed).toBeLessThanOrEqual(r.allowed);
  });
});

describe('rate limit keyed by an identity the caller cannot mint', () => {
  let port: number;
  beforeAll(async () => {
    ({ port } = await serve(
      ['t'],
      ['--rate-limit', '1', '--rate-limit-burst', '5', '--client-tokens', CLIENT_TOKENS, '--admin-token', ADMIN],
    ));
  });

  it("with client tokens configured, a junk token (403) still drains its address's bucket", async () => {
    const r = await drain(30, (i) => get(port, '/v1/uuid', bearer(`junk-token-${i}-xxxxxxxx`), '127.0.0.11'), 5, 1);
    expect(r.statuses.slice(0, 5)).toEqual(Array(5).fill(403));
    expect(r.passed).toBeLessThanOrEqual(r.allowed);
  });

  it('a configured token is its own client, whatever address it comes from; others at that address do not drain it', async () => {
    // drain the address 127.0.0.12 without a token
    for (let i = 0; i < 8; i++) await get(port, '/v1/segment/t', {}, '127.0.0.12');
    const anon = await get(port, '/v1/segment/t', {}, '127.0.0.12');
    expect(anon.status).toBe(429);
    expect(codeOf(anon)).toBe('RATE_LIMITED');
    expect(Number(anon.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // the orders client from that address and from two others: one bucket of 5
    const addrs = ['127.0.0.12', '127.0.0.13', '127.0.0.14'];
    const orders = await drain(12, (i) => get(port, '/v1/segment/t', bearer(ORDERS), addrs[i % 3]), 5, 1);
    expect(orders.statuses.slice(0, 5)).toEqual(Array(5).fill(200));
    expect(orders.passed).toBeLessThanOrEqual(orders.allowed);
    // billing has a bucket of its own
    expect((await get(port, '/v1/segment/t', bearer(BILLING), '127.0.0.12')).status).toBe(200);
  });

  it('X-Forwarded-For is ignored unless the proxy is trusted', async () => {
    const r = await drain(20, (i) => get(port, '/v1/uuid', { 'x-forwarded-for': `192.0.2.${i}` }, '127.0.0.15'), 5, 1);
    expect(r.passed).toBeLessThanOrEqual(r.allowed);
  });

  it('with --trusted-proxies, each forwarded client has its own bucket', async () => {
    const { port: p } = await serve(['t'], ['--rate-limit', '1', '--rate-limit-burst', '2', '--trusted-proxies', '127.0.0.16']);
    // behind the trusted proxy: 6 clients × 2 requests, all within their buckets; a third at once is refused
    for (let i = 0; i < 6; i++) {
      const fwd = { 'x-forwarded-for': `192.0.2.${i}` };
      for (let k = 0; k < 2; k++) expect((await get(p, '/v1/segment/t', fwd, '127.0.0.16')).status).toBe(200);
      if (i === 1) expect((await get(p, '/v1/segment/t', fwd, '127.0.0.16')).status).toBe(429);
    }
    // the header from an untrusted peer names nobody: that peer is the client
    const direct = await drain(8, (i) => get(p, '/v1/segment/t', { 'x-forwarded-for': `198.51.100.${i}` }, '127.0.0.17'), 2, 1);
    expect(direct.passed).toBeLessThanOrEqual(direct.allowed);
  });
});

describe('unknown-tag look-ups: a per-client share, never a reason to call a real tag missing', () => {
  it('a flood of random names from one address neither blanks out real tags nor tags made later, and is refused 429 with Retry-After', async () => {
    const { port, store } = await serve(['real'], []);
    // a tag made by another process after the server started: not on its list yet
    expect(sequoia(['tag', 'create', 'later', '--store', store]).status).toBe(0);
    const flood: Answer[] = [];
    const t0 = Date.now();
    for (let round = 0; round < 8; round++) {
      const names = Array.from({ length: 50 }, (_, i) => `rnd-${round}-${i}-${Math.random().toString(36).slice(2)}`);
      flood.push(...(await Promise.all(names.map((n) => get(port, `/api/segment/get/${n}`, {}, '127.0.0.21')))));
    }
    const floodMs = Date.now() - t0;
    expect([...new Set(flood.map(codeOf))].sort()).toEqual(['RATE_LIMITED', 'TAG_NOT_FOUND']);
    for (const a of flood.filter((x) => x.status === 429)) expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // only the flooder's share (burst 20 + 10/s) reached the store
    expect(flood.filter((x) => x.status === 404).length).toBeLessThanOrEqual(20 + Math.ceil(floodMs / 100) + 1);
    // right after, the real tag answers, to another client and to the flooder itself
    for (let i = 0; i < 5; i++) {
      expect((await get(port, '/api/segment/get/real', {}, '127.0.0.22')).status).toBe(200);
      expect((await get(port, '/api/segment/get/real', {}, '127.0.0.21')).status).toBe(200);
    }
    // another client's look-up of the new tag is its own share, not the flooder's
    const later = await get(port, '/api/segment/get/later', {}, '127.0.0.22');
    expect(later.status).toBe(200);
    expect(later.body).toBe('1');
  });

  it("with client tokens, the share is the token's", async () => {
    const { port, store } = await serve([], ['--client-tokens', CLIENT_TOKENS]);
    expect(sequoia(['tag', 'create', 'later', '--store', store]).status).toBe(0);
    const flood = await Promise.all(Array.from({ length: 60 }, (_, i) => get(port, `/v1/segment/nope-${i}`, bearer(ORDERS))));
    expect(flood.filter((x) => x.status === 429).length).toBeGreaterThan(0);
    // same address, another client
    expect((await get(port, '/v1/segment/later', bearer(BILLING))).status).toBe(200);
  });
});

describe('tag detail needs the admin or the metrics token once any token is configured', () => {
  let port: number;
  beforeAll(async () => {
    const unnamed = JSON.stringify([{ token: ORDERS, tags: ['*'] }]);
    ({ port } = await serve(['secret-volume'], ['--client-tokens', unnamed, '--admin-token', ADMIN]));
    expect((await get(port, '/api/segment/get/secret-volume', bearer(ORDERS))).status).toBe(200);
    expect((await get(port, '/api/segment/get/no-such-tag', bearer(ORDERS))).status).toBe(404);
  });

  it('without a token: /v1/status is a summary without tags, /metrics is 401; health stays open', async () => {
    const status = await get(port, '/v1/status');
    expect(status.status).toBe(200);
    expect(status.body).not.toContain('secret-volume');
    expect(status.body).not.toContain('no-such-tag');
    expect(JSON.parse(status.body)).toMatchObject({ detail: false, tags: [] });
    const metrics = await get(port, '/metrics');
    expect(metrics.status).toBe(401);
    expect(codeOf(metrics)).toBe('UNAUTHORIZED');
    expect(metrics.body).not.toContain('secret-volume');
    expect((await get(port, '/healthz')).status).toBe(200);
    expect((await get(port, '/readyz')).status).toBe(200);
  });

  it('a client token does not open them (403)', async () => {
    expect((await get(port, '/v1/status', bearer(ORDERS))).status).toBe(403);
    const m = await get(port, '/metrics', bearer(ORDERS));
    expect(m.status).toBe(403);
    expect(codeOf(m)).toBe('FORBIDDEN');
  });

  it('the metrics token (as Prometheus sends it) and the admin token see every tag', async () => {
    ({ port } = await serve(['secret-volume'], ['--client-tokens', CLIENT_TOKENS, '--admin-token', ADMIN, '--metrics-token', SCRAPER]));
    expect((await get(port, '/api/segment/get/secret-volume', bearer(ORDERS))).status).toBe(200);
    for (const t of [SCRAPER, ADMIN]) {
      const m = await get(port, '/metrics', bearer(t));
      expect(m.status).toBe(200);
      expect(m.body).toMatch(/sequoia_ids_issued_total\{[^}]*tag="secret-volume"/);
      const s = JSON.parse((await get(port, '/v1/status', bearer(t))).body) as { detail: boolean; tags: Array<{ tag: string }> };
      expect(s.detail).toBe(true);
      expect(s.tags.map((x) => x.tag)).toContain('secret-volume');
    }
    // the metrics token is not an admin token
    expect((await get(port, '/v1/tags', bearer(SCRAPER))).status).toBe(403);
    expect((await get(port, '/v1/segment/secret-volume', bearer(SCRAPER))).status).toBe(403);
  });
});

function one(raw: Buffer): RawResponse {
  const { responses } = parseResponses(raw);
  expect(responses.length).toBe(1);
  return responses[0] as RawResponse;
}

describe('every request gets one complete answer in the contract shape', () => {
  let port: number;
  let clustered: Promise<number> | undefined;
  beforeAll(async () => {
    ({ port } = await serve(['t'], ['--request-timeout-ms', '2000']));
  });

  it('HTTP/1.1 without Host: 400 INVALID_ARGUMENT in the error shape (HTTP/1.0 without Host is served)', async () => {
    const r = one((await rawExchange(port, 'GET /v1/uuid HTTP/1.1\r\n\r\n', { halfClose: true })).raw);
    expect(r.status).toBe(400);
    expect(contractProblem(r)).toBeUndefined();
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    expect(one((await rawExchange(port, 'GET /v1/segment/t HTTP/1.0\r\n\r\n', { halfClose: true })).raw).status).toBe(200);
  });

  it("HTTP/1.1 without Host on Leaf's path: Leaf's text/plain `CODE: message`, as every other error there", async () => {
    const r = one((await rawExchange(port, 'GET /api/segment/get/t HTTP/1.1\r\n\r\n', { halfClose: true })).raw);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    expect(r.body).toMatch(/^INVALID_ARGUMENT: .*Host/);
    expect(contractProblem(r)).toBeUndefined();
  });

  it('CONNECT: 405 METHOD_NOT_ALLOWED in the error shape, then close', async () => {
    const x = await rawExchange(port, 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n');
    expect(x.serverClosed).toBe(true);
    const r = one(x.raw);
    expect(r.status).toBe(405);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });
    // answered below fastify, still counted
    expect((await get(port, '/metrics')).body).toMatch(/sequoia_errors_total\{code="METHOD_NOT_ALLOWED"\} [1-9]/);
  });

  it('methods fastify does not route (PROPFIND, SEARCH, …) on a known path: 405 with Allow, as every other method; 404 elsewhere', async () => {
    const ask = async (method: string, path: string) =>
      one((await rawExchange(port, `${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, { halfClose: true })).raw);
    for (const method of ['PROPFIND', 'SEARCH', 'PUT']) {
      const r = await ask(method, '/v1/tags');
      expect({ method, status: r.status, allow: r.headers.allow }).toEqual({ method, status: 405, allow: 'GET, HEAD, POST' });
      expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });
    }
    const leaf = await ask('PROPFIND', '/api/segment/get/t');
    expect(leaf.status).toBe(405);
    expect(leaf.headers.allow).toBe('DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT');
    expect(leaf.body).toMatch(/^METHOD_NOT_ALLOWED: PROPFIND is not allowed/);
    expect(contractProblem(leaf)).toBeUndefined();
    const nowhere = await ask('PROPFIND', '/nope');
    expect(nowhere.status).toBe(404);
    expect(contractProblem(nowhere)).toBeUndefined();
  });

  it('requestTimeoutMs fires within a second of its setting, with a 408 in the error shape', async () => {
    // a head that never ends
    const x = await rawExchange(port, 'GET /v1/uuid HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n', { timeoutMs: 10_000, quietMs: 5000 });
    const r = one(x.raw);
    expect(r.status).toBe(408);
    expect(contractProblem(r)).toBeUndefined();
    expect(x.ms).toBeGreaterThanOrEqual(1900);
    expect(x.ms).toBeLessThan(3000);
  });

  // Under --workers 2 /metrics and /v1/status gather from every worker over IPC: truly asynchronous answers.
  it.each([
    ['/metrics', /sequoia_ids_issued_total/],
    ['/v1/status', /"uptimeSeconds"/],
    ['/v1/snowflake?count=10000', /"ids":\["\d+"/],
    ['/v1/uuid', /"ids":\["[0-9a-f-]{36}"\]/],
    ['/readyz', /"ready"/],
    ['/v1/segment/t?count=3', /"ids":\["\d+","\d+","\d+"\]/],
  ])('a client that half-closes after sending GET %s gets the whole answer (--workers 2)', async (path, body) => {
    clustered ??= serve(['t'], ['--workers', '2']).then((x) => x.port);
    const x = await rawExchange(await clustered, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, { halfClose: true });
    const r = one(x.raw);
    expect(r.status).toBe(200);
    expect(r.body).toMatch(body);
  });

  it.each([[''], ['Expect: 100-continue\r\n']])(
    'a client that half-closes in the middle of a body (%s) gets 400 in the error shape, not silence',
    async (expect100) => {
      const x = await rawExchange(
        port,
        `POST /v1/tags HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n${expect100}content-length: 40\r\n\r\n{"tag":"half`,
        { halfClose: true },
      );
      const answers = parseResponses(x.raw).responses.filter((r) => r.status >= 200);
      expect(answers.map((r) => r.status)).toEqual([400]);
      expect(contractProblem(answers[0] as RawResponse)).toBeUndefined();
    },
  );

  it('pipelined and half-closed: every request answered, in order', async () => {
    const req = (p: string) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const x = await rawExchange(
      await (clustered ??= serve(['t'], ['--workers', '2']).then((y) => y.port)),
      req('/metrics') + req('/v1/segment/t') + req('/v1/status') + req('/nope'),
      { halfClose: true },
    );
    const { responses } = parseResponses(x.raw);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 404]);
    expect(contractProblem(responses[3] as RawResponse)).toBeUndefined();
  });
});

/** A connection with a POST in flight (its body half sent): it keeps a SIGTERMed server draining. */
async function postInFlight(port: number, body: string) {
  const sock = connect(port, '127.0.0.1');
  let got = '';
  sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const closed = new Promise<void>((resolve) => sock.on('close', () => resolve()));
  sock.on('error', () => undefined);
  await new Promise((r) => sock.once('connect', r));
  sock.write(
    `POST /v1/tags HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  return {
    /** Sends the rest of the body, then `next` on the same connection; its answers once the server closes it. */
    async finish(next: string): Promise<RawResponse[]> {
      sock.write(`${body.slice(5)}${next}`);
      await Promise.race([closed, new Promise((r) => setTimeout(r, 8000))]);
      sock.destroy();
      return parseResponses(Buffer.from(got, 'latin1')).responses;
    },
  };
}

describe('shutdown', () => {
  it('a request arriving while the server drains gets 503 SHUTTING_DOWN with Retry-After; the one in flight completes', async () => {
    const { s, port } = await serve(['t'], ['--shutdown-timeout-ms', '5000']);
    // Requests in flight keep the server draining ...
    const json = await postInFlight(port, JSON.stringify({ tag: 'made-while-draining' }));
    const leaf = await postInFlight(port, JSON.stringify({ tag: 'made-while-draining-2' }));
    await new Promise((r) => setTimeout(r, 300));
    s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    // ... and a second one arrives on each connection after SIGTERM.
    const [responses, leafAnswers] = await Promise.all([
      json.finish('GET /v1/uuid HTTP/1.1\r\nHost: x\r\n\r\n'),
      leaf.finish('GET /api/segment/get/t HTTP/1.1\r\nHost: x\r\n\r\n'),
    ]);
    expect(responses.map((r) => r.status)).toEqual([201, 503]);
    const refused = responses[1] as RawResponse;
    expect(contractProblem(refused)).toBeUndefined();
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'SHUTTING_DOWN' } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // On Leaf's path, in Leaf's text/plain.
    expect(leafAnswers.map((r) => r.status)).toEqual([201, 503]);
    const leafRefused = leafAnswers[1] as RawResponse;
    expect(leafRefused.headers['content-type']).toMatch(/^text\/plain/);
    expect(leafRefused.body).toMatch(/^SHUTTING_DOWN: /);
    expect(contractProblem(leafRefused)).toBeUndefined();
    expect(await s.exited).toBe(0);
  });
});
