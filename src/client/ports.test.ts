/**
 * The client takes time, timers and randomness only from its options (issue
 * 42): a simulator injects them. Each test drives the client through a
 * ManualTimers and checks that what waited on node's timers before now waits
 * for the port.
 */
import { describe, expect, it } from 'vitest';
import type { Random } from '../core/random.js';
import { ManualClock, tick } from '../../test/helpers/fakes.js';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { createClient } from './client.js';

/** A segment server answering `count` IDs from 1 on; `busy` answers 503 first. */
function server(busy = 0) {
  let next = 1;
  let left = busy;
  const requests: string[] = [];
  const fetch = (async (input: string | URL | Request) => {
    const url = new URL(String(input));
    requests.push(url.pathname);
    if (left-- > 0) return new Response('{"error":{"code":"STORE_UNAVAILABLE","message":"busy"}}', { status: 503 });
    const ids: string[] = [];
    for (let i = Number(url.searchParams.get('count')); i > 0; i--) ids.push(String(next++));
    return new Response(JSON.stringify({ tag: 't', ids }), { status: 200 });
  }) as typeof globalThis.fetch;
  return { fetch, requests };
}

describe('client on injected ports', () => {
  it("a retry's backoff waits on the port, for the jitter the Random gave", async () => {
    const srv = server(2);
    const timers = new ManualTimers();
    const threeQuarters: Random = { fill: (b) => b.fill(0).fill(0xc0, 0, 1) }; // 0.11000…: 0.75
    const c = createClient({
      url: 'http://fake',
      fetch: srv.fetch,
      timers,
      random: threeQuarters,
      clock: new ManualClock(),
      retry: { baseDelayMs: 100 },
    });
    const p = c.next('t');
    const backoffs: number[] = [];
    for (let answered = 1; answered <= 2; answered++) {
      while (srv.requests.length < answered) await tick();
      for (let i = 0; i < 5; i++) await tick();
      expect(srv.requests).toHaveLength(answered); // the retry waits for the port
      const [backoff, ...more] = timers.pending('after').filter((t) => t.ms !== 2000); // not the request timeouts
      expect(more).toEqual([]);
      backoffs.push(backoff!.ms);
      timers.fire((t) => t === backoff);
    }
    // The busy answer cools the server 100 ms (a floor); the jitter is 0.75 of 100, then of 200 ms.
    expect(backoffs).toEqual([100, 150]);
    expect(await p).toBe(1n);
    await c.close();
  });

  it("each request's timeout is a timer of the port (unref), cleared once answered", async () => {
    const srv = server();
    const timers = new ManualTimers();
    const c = createClient({ url: 'http://fake', fetch: srv.fetch, timers, timeoutMs: 1234 });
    await c.next('t');
    await c.close();
    const timeouts = timers.made.filter((t) => t.ms === 1234);
    expect(timeouts.length).toBeGreaterThan(0);
    expect(timeouts.every((t) => t.unrefed && t.cleared)).toBe(true);
  });

  it('the background prefetch is scheduled on the port, and close() cancels it', async () => {
    const srv = server();
    const timers = new ManualTimers();
    const c = createClient({ url: 'http://fake', fetch: srv.fetch, timers, batch: { initial: 10, min: 10, max: 10 }, reserve: false });
    for (let i = 0; i < 3; i++) await c.next('t'); // past 10% of the batch
    const prefetch = timers.pending('after').filter((t) => t.ms === 0);
    expect(prefetch).toHaveLength(1);
    const before = srv.requests.length;
    timers.fire((t) => t === prefetch[0]);
    await tick();
    expect(srv.requests.length).toBe(before + 1);
    await c.close();
    expect(timers.pending('after').filter((t) => t.ms === 0)).toEqual([]);
  });
});
