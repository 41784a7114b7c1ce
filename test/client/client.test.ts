/**
 * The client SDK against real `sequoia serve` processes (dist/): buffered
 * next() under many concurrent callers while one server is SIGKILLed and
 * restarted on its port and the other is then killed for good; every ID is
 * unique, every promise settles, no rejection goes unhandled; typed errors
 * from the server's codes, and when no server is reachable.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ErrorCode, errorClassOf } from '../../src/core/errors.js';
import {
  createClient,
  InvalidArgumentError,
  SequoiaError,
  TagExistsError,
  TagNotFoundError,
  UnavailableError,
} from '../../src/client/index.js';
import { parseError, parseRetryAfter } from '../../src/client/transport.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);

let dir: string;
let db: string;

beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
  dir = mkdtempSync(join(tmpdir(), 'sequoia-client-'));
  db = `sqlite:${join(dir, 'ids.db')}`;
  for (const [tag, step] of [
    ['order', '8'],
    ['plain', '1000'],
    ['leaf', '5'],
  ] as const) {
    expect(sequoia(['tag', 'create', tag, '--step', step, '--store', db], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(0);
  }
});

afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  for (const s of running) s.child.kill('SIGKILL');
});

async function serve(state: string, extra: string[] = []): Promise<ServerProcess> {
  const s = await startServe([
    '--store',
    db,
    '--state-dir',
    join(dir, state),
    '--max-step',
    '64',
    '--workers',
    '1',
    '--log-level',
    'info',
    ...extra,
  ]);
  running.push(s);
  return s;
}

const portOf = (url: string) => new URL(url).port;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('client SDK against real servers', () => {
  it('serves bigints from its buffer: next, nextString, tryNext, nextBatch, uuid, snowflake, leaf mode', async () => {
    const s = await serve('basic');
    const client = createClient({ url: s.url, tags: ['plain'], batch: 50 });
    await client.ready();
    const a = await client.next('plain');
    expect(typeof a).toBe('bigint');
    const b = client.tryNext('plain');
    expect(b).toBe(a + 1n); // from the buffer, synchronously
    expect(await client.nextString('plain')).toBe(String(a + 2n));
    const batch = await client.nextBatch('plain', 25_000); // more than one server request (10,000 max)
    expect(batch).toHaveLength(25_000);
    expect(new Set(batch).size).toBe(25_000);
    for (const id of batch) expect(id > a + 2n).toBe(true);

    // tryNext on a tag never seen: undefined now, a fetch starts, IDs later
    expect(client.tryNext('order')).toBeUndefined();
    await expect.poll(() => client.tryNext('order'), { timeout: 5000 }).toBeTypeOf('bigint');

    expect(await client.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await client.uuid({ version: 4 })).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
    const probe = await fetch(`${s.url}/v1/snowflake`);
    if (probe.status === 200) {
      const sf = await client.snowflake();
      expect(typeof sf).toBe('bigint');
      expect(sf > 0n).toBe(true);
    }

    // typed errors carry the server's code
    const nf = await client.next('no-such-tag').catch((e: unknown) => e);
    expect(nf).toBeInstanceOf(SequoiaError);
    expect((nf as SequoiaError).code).toBe('TAG_NOT_FOUND');
    await expect(client.next('bad tag!')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });

    // Leaf mode: Leaf's text route, one request per ID
    const leaf = createClient({ url: s.url, mode: 'leaf' });
    const l1 = await leaf.next('leaf');
    const l2 = await leaf.next('leaf');
    expect(l2 > l1).toBe(true);
    expect(leaf.tryNext('leaf')).toBeUndefined();
    await expect(leaf.next('no-such-tag')).rejects.toMatchObject({ code: 'TAG_NOT_FOUND' });
    await leaf.close();

    // close(): pending calls settle (rejected), later calls reject, nothing hangs
    const pending = client.next('no-such-tag-2');
    await client.close();
    await expect(pending).rejects.toBeInstanceOf(SequoiaError);
    await expect(client.next('plain')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(client.tryNext('plain')).toBeUndefined();
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('stats() never lists a tag the servers do not know as serving (issue 39, item 8)', async () => {
    const s = await serve('stats-missing');
    const client = createClient({ url: s.url, batch: 20, reserve: false });
    try {
      // A tag that never existed: TAG_NOT_FOUND, and stats() leaves it out.
      await expect(client.next('stats-no-such-tag')).rejects.toBeInstanceOf(TagNotFoundError);
      await expect(client.nextBatch('stats-no-such-tag-2', 3)).rejects.toBeInstanceOf(TagNotFoundError);
      expect(client.stats().tags['stats-no-such-tag']).toBeUndefined();
      expect(client.stats().tags['stats-no-such-tag-2']).toBeUndefined();
      expect(client.buffered('stats-no-such-tag')).toBe(0);

      // A tag deleted on the server while this client still holds IDs of it: `missing`, not `serving`.
      const tag = `stats-del-${process.pid}`;
      const json = { 'content-type': 'application/json' };
      expect((await fetch(`${s.url}/v1/tags`, { method: 'POST', headers: json, body: JSON.stringify({ tag, step: 100 }) })).status).toBe(
        201,
      );
      for (let i = 0; i < 4; i++) await client.next(tag); // past the prefetch point (more than 10 % used)
      await expect.poll(() => client.buffered(tag), { timeout: 10_000 }).toBeGreaterThan(20); // the next batch is in
      expect(client.stats().tags[tag]?.state).toBe('serving');
      expect((await fetch(`${s.url}/v1/tags/${tag}`, { method: 'DELETE' })).status).toBe(204);
      // Into the next batch, past its prefetch point: that fetch answers TAG_NOT_FOUND.
      while (client.buffered(tag) > 15) await client.next(tag);
      await expect.poll(() => client.stats().tags[tag]?.state, { timeout: 10_000 }).toBe('missing');
      expect(client.stats().tags[tag]?.buffered).toBeGreaterThan(0);
      // Created again: served, and `serving` once a server answered for it.
      expect(
        (await fetch(`${s.url}/v1/tags`, { method: 'POST', headers: json, body: JSON.stringify({ tag, step: 100, start: '1000000' }) }))
          .status,
      ).toBe(201);
      while (client.buffered(tag) > 0) await client.next(tag);
      expect(await client.next(tag)).toBeGreaterThanOrEqual(1_000_000n);
      expect(client.stats().tags[tag]?.state).toBe('serving');
    } finally {
      await client.close();
      s.child.kill('SIGTERM');
      await s.exited;
    }
  });

  it('many concurrent callers, one server restarted, the other killed: no repeat, no lost promise, no unhandled rejection', async () => {
    const a = await serve('a');
    const b = await serve('b');
    const client = createClient({
      urls: [a.url, b.url],
      batch: { initial: 10, min: 5, max: 200, targetMs: 50 }, // small batches: many fetches, many failovers
      timeoutMs: 1000,
      retry: { attempts: 40, baseDelayMs: 20, maxDelayMs: 300 },
      // Failover and retries alone: the reserve range has its own test (test/client/reserve.test.ts).
      reserve: false,
    });
    const seen: bigint[] = [];
    let started = 0;
    let settled = 0;
    let rejected = 0;
    let stop = false;
    const caller = async () => {
      while (!stop) {
        started++;
        try {
          seen.push(await client.next('order'));
        } catch {
          rejected++;
          await sleep(10);
        } finally {
          settled++;
        }
        if (seen.length % 50 === 0) await sleep(1); // let timers and sockets run
      }
    };
    const callers = Array.from({ length: 200 }, caller);

    await sleep(800);
    const before = seen.length;
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    await sleep(300);
    const a2 = await serve('a', ['--port', portOf(a.url)]); // restarted on the same port, same state
    expect(a2.url).toBe(a.url);
    await sleep(800);
    b.child.kill('SIGKILL'); // gone for good: the client fails over to a
    expect(await b.exited).toBe('SIGKILL');
    await sleep(1000);
    const afterKill = seen.length;
    stop = true;
    await Promise.all(callers);

    expect(settled).toBe(started); // every promise settled
    expect(rejected).toBe(0); // the retry budget covers a restart
    expect(unhandled).toEqual([]);
    // IDs flowed before the kill (how many is speed, which belongs in benchmarks).
    expect(before).toBeGreaterThan(0);
    expect(afterKill).toBeGreaterThan(before);
    expect(new Set(seen).size).toBe(seen.length);
    await client.close();
  });

  it('answers a typed error when every server is down, and leaves no unhandled rejection', async () => {
    const s = await serve('down');
    const url = s.url;
    s.child.kill('SIGKILL');
    await s.exited;
    const client = createClient({
      urls: [url, 'http://127.0.0.1:9'],
      timeoutMs: 300,
      retry: { attempts: 4, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const t0 = Date.now();
    const e = await client.next('order').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(UnavailableError);
    expect((e as SequoiaError).code).toBe('STORE_UNAVAILABLE');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(client.tryNext('order')).toBeUndefined(); // the failed prefetch is not retried in a tight loop
    await expect(client.uuid()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await client.close();
    await sleep(50);
    expect(unhandled).toEqual([]);
  });

  it("rebuilds every code a real server answers as its own class (through the client, and the client's decoding of raw answers)", async () => {
    const tokens = JSON.stringify([{ token: 'client-token-orders-0001', tags: ['order'], name: 'orders' }]);
    const s = await serve('codes', [
      '--admin-token',
      'admin-token-0001',
      '--client-tokens',
      tokens,
      '--rate-limit',
      '1',
      '--rate-limit-burst',
      '3',
    ]);
    const seen = new Map<ErrorCode, SequoiaError>();
    const record = (e: unknown) => {
      expect(e).toBeInstanceOf(SequoiaError);
      const err = e as SequoiaError;
      expect(Object.getPrototypeOf(err)).toBe(errorClassOf(err.code).prototype);
      seen.set(err.code, err);
    };
    // Through the client's own calls.
    const client = createClient({ url: s.url, token: 'client-token-orders-0001', retry: { attempts: 1, baseDelayMs: 10, maxDelayMs: 10 } });
    record(await client.next('no-such-tag').catch((e: unknown) => e)); // FORBIDDEN: the token does not grant it
    record(
      await createClient({ url: s.url, retry: { attempts: 1, baseDelayMs: 10, maxDelayMs: 10 } })
        .next('order')
        .catch((e: unknown) => e),
    ); // UNAUTHORIZED
    record(await client.next('bad tag!').catch((e: unknown) => e)); // INVALID_ARGUMENT
    let limited: unknown;
    for (let i = 0; i < 20 && limited === undefined; i++)
      limited = await client.uuid().then(
        () => undefined,
        (e: unknown) => e,
      );
    record(limited); // RATE_LIMITED
    await client.close();
    // Raw answers of the same server, decoded as the client decodes them (routes the client does not call).
    await sleep(3000); // the rate limit refills
    const admin = { authorization: 'Bearer admin-token-0001', 'content-type': 'application/json' };
    const raw = async (path: string, init: RequestInit = {}) => {
      const r = await fetch(`${s.url}${path}`, init);
      return parseError(r.status, await r.text(), parseRetryAfter(r.headers.get('retry-after')), s.url);
    };
    record(await raw('/v1/tags', { method: 'POST', headers: admin, body: JSON.stringify({ tag: 'order' }) })); // TAG_EXISTS
    await sleep(1100);
    record(await raw('/v1/tags/nope', { headers: admin })); // TAG_NOT_FOUND
    await sleep(1100);
    record(await raw('/no/such/route')); // NOT_FOUND
    await sleep(1100);
    record(await raw('/v1/uuid', { method: 'DELETE' })); // METHOD_NOT_ALLOWED
    expect([...seen.keys()].sort()).toEqual([
      'FORBIDDEN',
      'INVALID_ARGUMENT',
      'METHOD_NOT_ALLOWED',
      'NOT_FOUND',
      'RATE_LIMITED',
      'TAG_EXISTS',
      'TAG_NOT_FOUND',
      'UNAUTHORIZED',
    ]);
    expect(seen.get('TAG_NOT_FOUND')).toBeInstanceOf(TagNotFoundError);
    expect(seen.get('TAG_EXISTS')).toBeInstanceOf(TagExistsError);
    expect(seen.get('INVALID_ARGUMENT')).toBeInstanceOf(InvalidArgumentError);
    expect(seen.get('RATE_LIMITED')?.retryAfterMs).toBeGreaterThan(0);
    // The codes no request of a healthy server can provoke are covered by the table's own test (src/core/errors.test.ts).
  }, 30_000);
});
