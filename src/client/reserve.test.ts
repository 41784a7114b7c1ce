/**
 * The reserve's pure parts (range set, sizing, which failures count as "no
 * server answered") and the client's reserve logic against an in-process fake
 * fetch that hands out consecutive IDs and can be switched off. The
 * real-process test is test/client/reserve.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type SequoiaError, UnavailableError, errorFromCode } from '../core/errors.js';
import { type ClientOptions, type ReserveEvent, createClient } from './client.js';
import { RangeSet, isNoServerAnswer, reserveExhausted, reserveTarget } from './reserve.js';

describe('RangeSet', () => {
  it('keeps consecutive IDs as one run and hands each out once, in order', () => {
    const r = new RangeSet();
    r.addIds([10n, 11n, 12n, 13n]);
    expect(r.runCount).toBe(1);
    r.addIds([20n, 21n, 5n]);
    expect(r.runCount).toBe(3);
    expect(r.size).toBe(7);
    const out: bigint[] = [];
    for (let v = r.take(); v !== undefined; v = r.take()) out.push(v);
    expect(out).toEqual([10n, 11n, 12n, 13n, 20n, 21n, 5n]);
    expect(r.size).toBe(0);
    expect(r.runCount).toBe(0);
    expect(r.take()).toBeUndefined();
  });

  it('a batch of 10,000 consecutive IDs costs one run (two bigints), not a list', () => {
    const r = new RangeSet();
    r.addIds(Array.from({ length: 10_000 }, (_, i) => 1_000_000n + BigInt(i)));
    expect(r.runCount).toBe(1);
    expect(r.size).toBe(10_000);
  });

  it('takeMany is all or nothing', () => {
    const r = new RangeSet();
    r.addIds([1n, 2n, 3n]);
    expect(r.takeMany(4)).toBeUndefined();
    expect(r.size).toBe(3);
    expect(r.takeMany(2)).toEqual([1n, 2n]);
    expect(r.takeMany(1)).toEqual([3n]);
    r.addIds([7n]);
    r.clear();
    expect(r.size).toBe(0);
    expect(r.take()).toBeUndefined();
  });
});

describe('reserveTarget', () => {
  const p = { seconds: 60, min: 100, max: 100_000 };
  it('is seconds × rate within [min, max]', () => {
    expect(reserveTarget(p, 0, 0)).toBe(100);
    expect(reserveTarget(p, 500, 0)).toBe(30_000); // 500 IDs/s for 60 s
    expect(reserveTarget(p, 0.5, 0)).toBe(100);
    expect(reserveTarget(p, 1e9, 0)).toBe(100_000);
  });
  it('only grows, and only by at least half (few top-ups), up to max', () => {
    expect(reserveTarget(p, 500, 30_000)).toBe(30_000);
    expect(reserveTarget(p, 600, 30_000)).toBe(30_000); // 36,000 < 45,000
    expect(reserveTarget(p, 800, 30_000)).toBe(48_000);
    expect(reserveTarget(p, 10, 30_000)).toBe(30_000); // a slower rate keeps what is held
    expect(reserveTarget(p, 1700, 90_000)).toBe(100_000); // max reached even if less than 1.5×
  });
});

describe('isNoServerAnswer', () => {
  it('counts unreachable, draining and store-down answers; not 4xx, rate limits, rollbacks or exhausted spaces', () => {
    for (const c of ['STORE_UNAVAILABLE', 'SEGMENTS_EXHAUSTED', 'SHUTTING_DOWN'])
      expect(isNoServerAnswer(errorFromCode(c, 'm'))).toBe(true);
    for (const c of [
      'INVALID_ARGUMENT',
      'TAG_NOT_FOUND',
      'FORBIDDEN',
      'RATE_LIMITED',
      'STORE_ROLLBACK_DETECTED',
      'ID_SPACE_EXHAUSTED',
      'INTERNAL',
      'RESERVE_EXHAUSTED',
    ]) {
      expect(isNoServerAnswer(errorFromCode(c, 'm'))).toBe(false);
    }
    expect(isNoServerAnswer(new Error('x'))).toBe(false);
  });
  it('the refusal is an UnavailableError with the stable code and the cause', () => {
    const cause = new UnavailableError('STORE_UNAVAILABLE', 'http://a: ECONNREFUSED');
    const e = reserveExhausted('order', cause);
    expect(e).toBeInstanceOf(UnavailableError);
    expect(e.code).toBe('RESERVE_EXHAUSTED');
    expect(e.message).toContain('ECONNREFUSED');
    expect(e.cause).toBe(cause);
  });
});

/** A fake server: consecutive IDs per request; `up = false` refuses connections. */
function fakeServer() {
  const s = {
    up: true,
    nextId: 1n,
    requests: 0,
    issued: new Set<bigint>(),
    fetch: (async (input: string | URL | Request) => {
      s.requests++;
      if (!s.up) throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
      const url = new URL(String(input));
      const m = /^\/v1\/segment\/([^/]+)$/.exec(url.pathname);
      if (!m) return new Response('{"error":{"code":"NOT_FOUND","message":"no"}}', { status: 404 });
      const count = Number(url.searchParams.get('count'));
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        s.issued.add(s.nextId);
        ids.push(String(s.nextId++));
      }
      return new Response(JSON.stringify({ tag: m[1], ids }), { status: 200 });
    }) as typeof fetch,
  };
  return s;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A client of `srv` that gives up on the first failed call (no retry delay), with the given options on top. */
const clientOf = (srv: { readonly fetch: ClientOptions['fetch'] }, o: Omit<ClientOptions, 'url' | 'fetch'>) =>
  createClient({ url: 'http://fake', fetch: srv.fetch, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 }, ...o });

describe('client reserve (fake fetch)', () => {
  it('takes a reserve after the first batch, serves it only when no server answers, then refuses; replaces it when a server answers', async () => {
    const srv = fakeServer();
    const events: ReserveEvent[] = [];
    const client = clientOf(srv, {
      batch: { initial: 10, min: 10, max: 10 },
      reserve: { min: 50, max: 50, probeMs: 20 },
      onReserve: (e) => events.push(e),
    });
    const seen: bigint[] = [];
    seen.push(await client.next('t'));
    await expect.poll(() => client.stats().tags.t?.reserve).toBe(50);
    // While servers answer, the reserve is not touched.
    for (let i = 0; i < 30; i++) seen.push(await client.next('t'));
    expect(client.stats().tags.t?.reserve).toBe(50);
    expect(client.stats().servedFromReserve).toBe(0);

    srv.up = false;
    const before = client.stats().tags.t!.buffered;
    for (let i = 0; i < before + 50; i++) seen.push(await client.next('t'));
    const s1 = client.stats();
    expect(s1.servedFromReserve).toBe(50);
    expect(s1.tags.t?.reserve).toBe(0);
    expect(s1.tags.t?.state).toBe('using');
    const refused = await client.next('t').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UnavailableError);
    expect((refused as SequoiaError).code).toBe('RESERVE_EXHAUSTED');
    await expect(client.nextBatch('t', 3)).rejects.toMatchObject({ code: 'RESERVE_EXHAUSTED' });
    const s2 = client.stats();
    expect(s2.refusals).toBe(2);
    expect(s2.tags.t?.state).toBe('exhausted');
    expect(events.map((e) => e.state)).toEqual(['using', 'exhausted']);

    srv.up = true;
    // The next probe (every 20 ms) finds the server; the reserve is replaced.
    await expect
      .poll(
        async () =>
          client.next('t').then(
            () => true,
            () => false,
          ),
        { timeout: 5000 },
      )
      .toBe(true);
    await expect.poll(() => client.stats().tags.t?.reserve, { timeout: 5000 }).toBe(50);
    expect(events.map((e) => e.state)).toEqual(['using', 'exhausted', 'replenished']);
    expect(client.stats().tags.t?.state).toBe('serving');
    expect(client.stats().msOnReserve).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) seen.push(await client.next('t'));
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of seen) expect(srv.issued.has(id)).toBe(true); // nothing invented
    await client.close();
    expect(client.stats().tags).toEqual({}); // an unused reserve at close is a gap
  });

  it('nextBatch falls back to the reserve all or nothing; reserve:false behaves as before (STORE_UNAVAILABLE)', async () => {
    const srv = fakeServer();
    const client = clientOf(srv, { batch: 10, reserve: { min: 40, max: 40 } });
    await client.next('t');
    await expect.poll(() => client.stats().tags.t?.reserve).toBe(40);
    srv.up = false;
    const got = await client.nextBatch('t', 30); // buffer + reserve
    expect(new Set(got).size).toBe(30);
    for (const id of got) expect(srv.issued.has(id)).toBe(true);
    await expect(client.nextBatch('t', 100)).rejects.toMatchObject({ code: 'RESERVE_EXHAUSTED' });
    expect(client.stats().tags.t!.reserve).toBeGreaterThan(0); // a refused batch spends nothing of the reserve
    await client.close();

    const srv2 = fakeServer();
    const off = clientOf(srv2, { batch: 10, reserve: false });
    await off.next('t');
    await sleep(20);
    expect(off.stats().tags.t?.reserve).toBe(0);
    expect(srv2.nextId).toBe(11n); // one batch, no reserve request
    srv2.up = false;
    const e = await (async () => {
      for (let i = 0; i < 20; i++) await off.next('t');
    })().catch((x: unknown) => x);
    expect((e as SequoiaError).code).toBe('STORE_UNAVAILABLE');
    await off.close();
  });

  it('sizes the reserve from the observed rate and refuses with nothing invented when the reserve was never taken', async () => {
    const srv = fakeServer();
    const client = clientOf(srv, {
      batch: { initial: 100, min: 100, max: 100, targetMs: 1000 },
      reserve: { seconds: 60, min: 10, max: 5000 },
    });
    // Draw fast for a while: the observed rate is far above 10/60 per second, so the reserve grows past min.
    for (let i = 0; i < 1000; i++) await client.next('t');
    await expect.poll(() => client.stats().tags.t!.reserveTarget).toBeGreaterThan(10);
    await client.close();

    const down = fakeServer();
    down.up = false;
    const c2 = clientOf(down, {});
    await expect(c2.next('t')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await c2.close();
  });

  it('validates the reserve options', () => {
    expect(() => createClient({ url: 'http://x', reserve: { min: 0 } })).toThrow(/reserve.min/);
    expect(() => createClient({ url: 'http://x', reserve: { max: 2_000_000 } })).toThrow(/reserve.max/);
    expect(() => createClient({ url: 'http://x', reserve: { seconds: 0 } })).toThrow(/reserve.seconds/);
  });
});
