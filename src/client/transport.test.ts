import { describe, expect, it } from 'vitest';
import { Transport } from './transport.js';

/** Servers by origin: each answers from its script (the last entry repeats). */
function fakeFetch(script: Record<string, Array<'ok' | 'draining' | 'shutting-down'>>, calls: string[]): typeof fetch {
  const seen = new Map<string, number>();
  return (async (input: string | URL | Request) => {
    const url = new URL(String(input));
    calls.push(url.origin);
    const steps = script[url.origin] ?? ['ok'];
    const n = seen.get(url.origin) ?? 0;
    seen.set(url.origin, n + 1);
    const step = steps[Math.min(n, steps.length - 1)];
    if (step === 'shutting-down') {
      return new Response(JSON.stringify({ error: { code: 'SHUTTING_DOWN', message: 'the server is shutting down; retry' } }), {
        status: 503,
        headers: { 'retry-after': '1', 'sequoia-draining': '1' },
      });
    }
    return new Response(JSON.stringify({ from: url.origin }), {
      status: 200,
      headers: step === 'draining' ? { 'sequoia-draining': '1' } : {},
    });
  }) as typeof fetch;
}

function transport(urls: string[], f: typeof fetch, attempts: number, maxDelayMs = 2000): Transport {
  return new Transport({
    urls,
    timeoutMs: 1000,
    retry: { attempts, baseDelayMs: 50, maxDelayMs },
    fetch: f,
    signal: new AbortController().signal,
    random: () => 0.5,
  });
}

const A = 'http://a.test:1';
const B = 'http://b.test:1';

describe('Transport and a draining server (rolling restarts)', () => {
  it('a good answer marked draining is used, and later calls go to another server', async () => {
    const calls: string[] = [];
    const t = transport([A, B], fakeFetch({ [A]: ['draining'], [B]: ['ok'] }, calls), 6);
    expect(JSON.parse(await t.get('/x'))).toEqual({ from: A });
    expect(JSON.parse(await t.get('/x'))).toEqual({ from: B });
    expect(JSON.parse(await t.get('/x'))).toEqual({ from: B });
    expect(calls).toEqual([A, B, B]);
  });

  it('SHUTTING_DOWN is retried at once on another server without using an attempt', async () => {
    const calls: string[] = [];
    // One attempt only: a refusal that counted would fail the call.
    const t = transport([A, B], fakeFetch({ [A]: ['shutting-down'], [B]: ['ok'] }, calls), 1);
    const started = performance.now();
    expect(JSON.parse(await t.get('/x'))).toEqual({ from: B });
    expect(performance.now() - started).toBeLessThan(500); // not the Retry-After second
    expect(calls).toEqual([A, B]);
    // A stays passed over for the next calls.
    await t.get('/x');
    expect(calls).toEqual([A, B, B]);
  });

  it('one URL (a balancer or --workers N): SHUTTING_DOWN is retried at once on the same URL (a new connection)', async () => {
    const calls: string[] = [];
    const t = transport([A], fakeFetch({ [A]: ['shutting-down', 'ok'] }, calls), 1);
    const started = performance.now();
    expect(JSON.parse(await t.get('/x'))).toEqual({ from: A });
    expect(performance.now() - started).toBeLessThan(500);
    expect(calls).toEqual([A, A]);
  });

  it('every server draining: the attempts still bound the call', async () => {
    const calls: string[] = [];
    const t = transport([A, B], fakeFetch({ [A]: ['shutting-down'], [B]: ['shutting-down'] }, calls), 2, 100);
    await expect(t.get('/x')).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    // two free retries (one per URL), then the two counted attempts
    expect(calls.length).toBe(4);
  });
});

describe('backoff sleeps', () => {
  it('many calls backing off at once add no listener each to the client signal (no MaxListenersExceededWarning in the app)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const closed = new AbortController();
      const t = new Transport({
        urls: [A],
        timeoutMs: 1000,
        retry: { attempts: 2, baseDelayMs: 20, maxDelayMs: 20 },
        fetch: (async () => new Response('{"error":{"code":"STORE_UNAVAILABLE","message":"down"}}', { status: 503 })) as typeof fetch,
        signal: closed.signal,
        random: () => 1,
      });
      const calls = Array.from({ length: 15 }, () => t.get('/v1/segment/a?count=1').catch((e: unknown) => e));
      const results = await Promise.all(calls);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(results.every((e) => e instanceof Error)).toBe(true);
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
