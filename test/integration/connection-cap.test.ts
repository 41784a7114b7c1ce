/**
 * Issue 39, item 8, on a real server process and real sockets: a connection
 * over the connection cap (`--max-connections`, `--max-connections-per-address`)
 * was reset without a byte. While descriptors remain it now gets one complete
 * answer in the error shape (429 RATE_LIMITED with Retry-After, as nginx's
 * limit_conn answers instead of dropping) and is closed; only once the
 * answers in flight hold every descriptor set aside for them is a connection
 * reset. Connections under the cap are served as before, and one freed is
 * usable again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFUSAL_ANSWERS } from '../../src/server/http-front.js';
import { type ServerProcess, startServe } from '../helpers/cli.js';

const CAP = 4;
const PER_ADDRESS = 3;
/** Without keep-alive: a pooled connection of fetch's would hold a slot of the cap. */
const CLOSE = { headers: { connection: 'close' } };

/** What a client socket saw: every byte, and how it ended. */
interface Seen {
  readonly socket: Socket;
  text: () => string;
  /** Resolves once the server closed its side (FIN) or reset the connection. */
  readonly ended: Promise<'fin' | 'reset'>;
}

/** Opens a connection (from `localAddress`), writes `request` when given, and records what comes back. */
function open(port: number, request?: string, localAddress = '127.0.0.1'): Promise<Seen> {
  return new Promise((resolve) => {
    // allowHalfOpen: the client does not close on the server's FIN, so an answered refusal keeps its slot until the test closes it.
    const socket = connect({ port, host: '127.0.0.1', localAddress, allowHalfOpen: true });
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    const ended = new Promise<'fin' | 'reset'>((done) => {
      socket.once('end', () => done('fin'));
      socket.once('error', () => done('reset'));
      socket.once('close', () => done('reset'));
    });
    socket.once('connect', () => {
      if (request !== undefined) socket.write(request);
      resolve({ socket, text: () => Buffer.concat(parts).toString('latin1'), ended });
    });
  });
}

/** sequoia_errors_total{code="RATE_LIMITED"} of the server. */
async function rateLimited(url: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    // Refused (429, or reset while the answers' slots are still taken) until the test's own sockets are seen closed.
    const text = await fetch(`${url}/metrics`, CLOSE).then(
      (r) => r.text(),
      (e: unknown) => String(e),
    );
    const m = /^sequoia_errors_total\{code="RATE_LIMITED"\} (\d+)$/m.exec(text);
    if (m) return Number(m[1]);
    if (attempt === 50) throw new Error(`no RATE_LIMITED count in /metrics: ${text.slice(0, 300)}`);
  }
}

const GET = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

/**
 * A connection held open by a served keep-alive request: the server has counted it once the answer is in.
 * Refused (a slot the test freed just before is not yet seen free by the server): tried again, a bounded number of times.
 */
async function held(port: number, localAddress?: string): Promise<Seen> {
  for (let attempt = 0; ; attempt++) {
    const s = await open(port, GET('/healthz'), localAddress);
    await expect.poll(() => s.text(), { timeout: 10_000 }).toMatch(/^HTTP\/1\.1 (200 [^]*\r\n\r\n|429 )/);
    if (s.text().startsWith('HTTP/1.1 200 ')) return s;
    s.socket.destroy();
    if (attempt === 50) throw new Error(`no free slot: ${s.text()}`);
  }
}

function parse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

/** The whole refusal: a complete 429 in the error shape, then the server's FIN. */
async function expectRefusal(s: Seen, message: RegExp): Promise<void> {
  expect(await s.ended).toBe('fin');
  const a = parse(s.text());
  expect(a.status).toBe(429);
  expect(a.headers['retry-after']).toBe('1');
  expect(a.headers.connection).toBe('close');
  expect(a.headers['content-type']).toMatch(/^application\/json/);
  expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.body));
  const body = JSON.parse(a.body) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe('RATE_LIMITED');
  expect(body.error.message).toMatch(message);
}

describe('a connection over the connection cap', () => {
  let server: ServerProcess;
  let dir: string;
  let port: number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-conn-cap-'));
    server = await startServe([
      '--workers',
      '1',
      '--store',
      `sqlite:${join(dir, 'ids.db')}`,
      '--state-dir',
      join(dir, 'state'),
      '--max-connections',
      String(CAP),
      '--max-connections-per-address',
      String(PER_ADDRESS),
    ]);
    port = Number(new URL(server.url).port);
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('is answered 429 RATE_LIMITED in the error shape and closed, per address and per server; a freed slot serves again', async () => {
    // One address at its bound: its next connection is refused with an answer; another address is served.
    const mine = [await held(port), await held(port), await held(port)];
    sockets.push(...mine.map((s) => s.socket));
    const overAddress = await open(port, GET('/v1/uuid'));
    sockets.push(overAddress.socket);
    await expectRefusal(overAddress, /from your address/);
    const other = await held(port, '127.0.0.2');
    sockets.push(other.socket);

    // The server at its cap: a new connection from a third address is refused with an answer too ...
    const overServer = await open(port, GET('/v1/uuid'), '127.0.0.3');
    sockets.push(overServer.socket);
    await expectRefusal(overServer, /^too many open connections to this server;/);
    // ... also when it sends nothing before the answer comes.
    const silent = await open(port, undefined, '127.0.0.3');
    sockets.push(silent.socket);
    await expectRefusal(silent, /^too many open connections to this server;/);
    // An HTTP client sees the 429 and its body, not a network error.
    const viaFetch = await fetch(`${server.url}/v1/uuid`, CLOSE).catch((e: unknown) => e);
    expect(viaFetch).toBeInstanceOf(Response);
    expect((viaFetch as Response).status).toBe(429);
    expect((viaFetch as Response).headers.get('retry-after')).toBe('1');
    expect(((await (viaFetch as Response).json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');

    // The held connections are still served ...
    mine[0]?.socket.write(GET('/healthz'));
    await expect.poll(() => mine[0]?.text().split('HTTP/1.1 200').length, { timeout: 10_000 }).toBe(3);
    // ... and once one closes, a new connection is served.
    mine[1]?.socket.destroy();
    await expect.poll(async () => (await fetch(`${server.url}/healthz`, CLOSE)).status, { timeout: 10_000 }).toBe(200);
    // The answers count in sequoia_errors_total like every other error answer.
    for (const s of mine) s.socket.destroy();
    // (At least: a request of the test's own may have been refused while a freed slot was not yet seen free.)
    expect(await rateLimited(server.url)).toBeGreaterThanOrEqual(4);
  });

  it(`answers at most ${REFUSAL_ANSWERS} refusals at a time; past them (no descriptor set aside is left) a connection is reset`, async () => {
    for (const s of sockets.splice(0)) s.destroy();
    const before = await rateLimited(server.url);
    // The server at its cap again (several addresses, under the per-address bound).
    const full: Seen[] = [];
    for (let i = 0; i < CAP; i++) full.push(await held(port, `127.0.1.${i + 1}`));
    sockets.push(...full.map((s) => s.socket));
    // Refused connections that never close (allowHalfOpen): each keeps an answer's descriptor until the server lets it go.
    const over: Seen[] = [];
    for (let i = 0; i < REFUSAL_ANSWERS + 8; i++) over.push(await open(port, GET('/v1/uuid'), '127.0.2.1'));
    sockets.push(...over.map((s) => s.socket));
    await Promise.all(over.map((s) => s.ended));
    const answered = over.filter((s) => s.text().startsWith('HTTP/1.1 429 '));
    const silent = over.filter((s) => s.text() === '');
    // Every one either has the whole answer or nothing at all: never half an answer.
    expect(answered.length + silent.length).toBe(over.length);
    for (const s of answered) expect(JSON.parse(parse(s.text()).body)).toMatchObject({ error: { code: 'RATE_LIMITED' } });
    expect(answered.length).toBeGreaterThanOrEqual(REFUSAL_ANSWERS);
    expect(silent.length).toBeGreaterThan(0);
    for (const s of [...full, ...over]) s.socket.destroy();
    // Only the answers count as error answers (the /metrics request itself may be refused while the slots free up).
    expect((await rateLimited(server.url)) - before).toBeGreaterThanOrEqual(answered.length);
  });
});
