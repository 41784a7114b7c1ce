import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { IdService } from '../service/id-service.js';
import { ControlledStore, ManualClock } from '../../test/helpers/fakes.js';
import { buildApp } from './build-app.js';
import { COVER_CRITICAL_SECONDS, COVER_OK_SECONDS, coverSeconds, SequoiaMetrics, tagHealth } from './metrics.js';
import { UI_JS } from './ui/page.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const DESIGN_NAMES = [
  'sequoia_ids_issued_total',
  'sequoia_errors_total',
  'sequoia_segment_remaining',
  'sequoia_segment_next_ready',
  'sequoia_segment_step',
  'sequoia_segment_cover_seconds',
  'sequoia_segment_load_seconds',
  'sequoia_segment_load_failures_total',
];
const SNOWFLAKE_NAMES = [
  'sequoia_snowflake_worker_id',
  'sequoia_snowflake_last_tick',
  'sequoia_snowflake_clock_backwards_total',
  'sequoia_snowflake_sequence_exhausted_total',
  'sequoia_worker_lease_expiry_seconds',
];

async function setup(opts: { adminToken?: string; metrics?: false; clock?: ManualClock } = {}) {
  const store = new ControlledStore();
  const marks = new MemoryHighWaterMarkStore();
  const metrics = opts.metrics === false ? false : new SequoiaMetrics({ sampleIntervalMs: 0, clock: opts.clock, defaultMetrics: true });
  const service = new IdService({
    store,
    marks,
    refreshIntervalMs: 0,
    allocator: { loadTimeoutMs: 100, minRetryDelayMs: 50 },
    ...(metrics ? { onLoad: metrics.onLoad } : {}),
  });
  await service.start();
  app = await buildApp({ service, adminToken: opts.adminToken, metrics });
  return { app, store, service, metrics: metrics || undefined };
}

/** The value of one sample line, e.g. value(text, 'sequoia_errors_total{code="NOT_FOUND"}'). */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (line === undefined) return undefined;
  const v = line.slice(series.length + 1);
  return v === '+Inf' ? Number.POSITIVE_INFINITY : Number(v);
}

describe('GET /metrics', () => {
  it('exposes the design names and default process metrics, and no snowflake placeholders', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 't', step: 100 });
    await app.inject('/v1/segment/t?count=1');
    const r = await app.inject('/metrics');
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of DESIGN_NAMES) expect(r.body).toContain(`# TYPE ${name} `);
    expect(r.body).toContain('# TYPE sequoia_segment_load_seconds histogram');
    expect(r.body).toContain('# TYPE sequoia_ids_issued_total counter');
    expect(r.body).toMatch(/^process_cpu_user_seconds_total /m);
    expect(r.body).toMatch(/^nodejs_heap_size_used_bytes /m);
    for (const name of SNOWFLAKE_NAMES) expect(r.body).not.toContain(name);
  });

  it('ids issued, remaining and step move as IDs are drawn (read from the allocators, not counted per ID)', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 'order', step: 100 });
    await app.inject('/v1/segment/order?count=30');
    let m = (await app.inject('/metrics')).body;
    expect(value(m, 'sequoia_ids_issued_total{generator="segment",tag="order"}')).toBe(30);
    // 30 of 100 used: next (doubled step, 200) prefetched
    expect(value(m, 'sequoia_segment_remaining{tag="order"}')).toBe(70 + 200);
    expect(value(m, 'sequoia_segment_next_ready{tag="order"}')).toBe(1);
    expect(value(m, 'sequoia_segment_step{tag="order"}')).toBe(200);
    for (let i = 0; i < 5; i++) expect((await app.inject('/api/segment/get/order')).statusCode).toBe(200);
    m = (await app.inject('/metrics')).body;
    expect(value(m, 'sequoia_ids_issued_total{generator="segment",tag="order"}')).toBe(35);
    expect(value(m, 'sequoia_segment_remaining{tag="order"}')).toBe(65 + 200);
    expect(value(m, 'sequoia_segment_load_seconds_count{tag="order"}')).toBe(2);
    // idle so far (no sample with traffic): cover is infinite
    expect(value(m, 'sequoia_segment_cover_seconds{tag="order"}')).toBe(Number.POSITIVE_INFINITY);
  });

  it('counts errors by code (every code starts at 0) and load failures by tag', async () => {
    const { app, service, store } = await setup();
    let m = (await app.inject('/metrics')).body;
    expect(value(m, 'sequoia_errors_total{code="STORE_ROLLBACK_DETECTED"}')).toBe(0);
    expect(value(m, 'sequoia_errors_total{code="NOT_FOUND"}')).toBe(0);
    await app.inject('/no/such/route');
    await app.inject('/api/segment/get/missing');
    await app.inject('/v1/segment/missing2');
    await service.createTag({ tag: 'x', step: 10 });
    await app.inject('/v1/segment/x?count=10');
    store.down = true;
    const r = await app.inject('/v1/segment/x?count=1000'); // drains both buffers, then the load fails
    expect(r.statusCode).toBe(503);
    m = (await app.inject('/metrics')).body;
    expect(value(m, 'sequoia_errors_total{code="NOT_FOUND"}')).toBe(1);
    expect(value(m, 'sequoia_errors_total{code="TAG_NOT_FOUND"}')).toBe(2);
    expect(value(m, 'sequoia_errors_total{code="SEGMENTS_EXHAUSTED"}')).toBe(1);
    expect(value(m, 'sequoia_segment_load_failures_total{tag="x"}')).toBeGreaterThanOrEqual(1);
    expect(value(m, 'sequoia_segment_remaining{tag="x"}')).toBe(0);
    expect(value(m, 'sequoia_segment_cover_seconds{tag="x"}')).toBe(0);
  });

  it('totals carry over when a tag is deleted and created again', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 'again', step: 10 });
    await app.inject('/v1/segment/again?count=7');
    await app.inject('/metrics'); // the collector sees the first allocator
    await service.deleteTag('again');
    await service.createTag({ tag: 'again', step: 10, start: '1000000' });
    await app.inject('/v1/segment/again?count=3');
    const m = (await app.inject('/metrics')).body;
    expect(value(m, 'sequoia_ids_issued_total{generator="segment",tag="again"}')).toBe(10);
  });

  it('with metrics: false there is no /metrics route, and /v1/status still answers', async () => {
    const { app } = await setup({ metrics: false });
    expect((await app.inject('/metrics')).statusCode).toBe(404);
    expect((await app.inject('/v1/status')).statusCode).toBe(200);
  });

  it('the snowflake hook registers its metrics only when a generator reports', async () => {
    const clock = new ManualClock(1_000_000);
    const { app, metrics } = await setup({ clock });
    metrics?.registerSnowflakeSource({
      report: () => [
        {
          generator: 'twitter',
          workerId: 7,
          lastTick: 123,
          clockBackwardsTotal: 2,
          sequenceExhaustedTotal: 5,
          leaseExpiresAtMs: 1_030_000,
          leaseTtlMs: 45_000,
          issuedTotal: 99,
          layoutRemainingSeconds: 86_400,
        },
      ],
    });
    const m = (await app.inject('/metrics')).body;
    expect(value(m, 'sequoia_snowflake_worker_id{generator="twitter"}')).toBe(7);
    expect(value(m, 'sequoia_snowflake_last_tick{generator="twitter"}')).toBe(123);
    expect(value(m, 'sequoia_snowflake_clock_backwards_total{generator="twitter"}')).toBe(2);
    expect(value(m, 'sequoia_snowflake_sequence_exhausted_total{generator="twitter"}')).toBe(5);
    expect(value(m, 'sequoia_worker_lease_expiry_seconds{generator="twitter"}')).toBe(30);
    expect(value(m, 'sequoia_worker_lease_ttl_seconds{generator="twitter"}')).toBe(45);
    expect(value(m, 'sequoia_ids_issued_total{generator="snowflake",layout="twitter"}')).toBe(99);
    expect(value(m, 'sequoia_layout_remaining_seconds{generator="twitter"}')).toBe(86_400);
  });
});

describe('sequoia_store_reachable', () => {
  it('is 1 while the store answers pings and 0 once it does not, pinged at scrape time (an idle server too)', async () => {
    const { app, store } = await setup();
    expect(value((await app.inject('/metrics')).body, 'sequoia_store_reachable')).toBe(1);
    store.down = true;
    // The probe caches a ping for a second: wait for the next one, not for a fixed time.
    await expect.poll(async () => value((await app.inject('/metrics')).body, 'sequoia_store_reachable'), { timeout: 5000 }).toBe(0);
    expect((await app.inject('/v1/status')).json().store.reachable).toBe(false);
    store.down = false;
    await expect.poll(async () => value((await app.inject('/metrics')).body, 'sequoia_store_reachable'), { timeout: 5000 }).toBe(1);
  });
});

describe('rate and cover', () => {
  it('the weighted rate follows the IDs drawn between samples; cover = remaining / rate', async () => {
    const clock = new ManualClock();
    const { app, service, metrics } = await setup({ clock });
    await service.createTag({ tag: 'r', step: 1000 });
    await app.inject('/v1/segment/r?count=1');
    metrics?.sample();
    await app.inject('/v1/segment/r?count=100');
    clock.advance(1000);
    metrics?.sample(); // the first interval seeds the average: 100/s
    expect(metrics?.tagStatuses()[0]?.ratePerSecond).toBe(100);
    await app.inject('/v1/segment/r?count=40');
    clock.advance(2000);
    metrics?.sample(); // 20/s over 2 s
    const [t] = metrics?.tagStatuses() ?? [];
    const alpha = 1 - Math.exp(-2 / 30);
    const rate = 100 + alpha * (20 - 100);
    expect(t?.ratePerSecond).toBeCloseTo(rate, 6);
    expect(t?.rateHistory).toEqual([100, 20]);
    expect(t?.coverSeconds).toBeCloseTo((t?.snapshot.remaining ?? 0) / rate, 6);
    const st = (await app.inject('/v1/status')).json() as { tags: Array<{ ratePerSecond: number; coverSeconds: number; issued: number }> };
    expect(st.tags[0]?.issued).toBe(141);
    expect(st.tags[0]?.ratePerSecond).toBeCloseTo(rate, 2);
  });

  it('coverSeconds: 0 when nothing is buffered, infinite when idle', () => {
    expect(coverSeconds(0, 10)).toBe(0);
    expect(coverSeconds(0, 0)).toBe(0);
    expect(coverSeconds(100, 0)).toBe(Number.POSITIVE_INFINITY);
    expect(coverSeconds(100, 10)).toBe(10);
  });

  const base = {
    remaining: 1000,
    remainingCurrent: 500,
    currentSize: 1000,
    nextReady: true,
    loads: 2,
    lastError: undefined,
    refusing: undefined,
  };
  const failing = { code: 'STORE_UNAVAILABLE', message: 'down' };
  it.each([
    ['idle, buffered', base, Infinity, 'ok'],
    ['cover above the green threshold', base, COVER_OK_SECONDS, 'ok'],
    ['cover between thresholds', base, COVER_OK_SECONDS - 1, 'warn'],
    ['cover below the red threshold', base, COVER_CRITICAL_SECONDS - 1, 'critical'],
    ['refusing (rollback)', { ...base, refusing: 'STORE_ROLLBACK_DETECTED' }, Infinity, 'critical'],
    ['store failing, buffers full', { ...base, lastError: failing }, Infinity, 'warn'],
    [
      'store failing, both buffers empty',
      { ...base, remaining: 0, remainingCurrent: 0, nextReady: false, lastError: failing },
      0,
      'critical',
    ],
    [
      'store failing, no next, current under half, idle',
      { ...base, remaining: 400, remainingCurrent: 400, nextReady: false, lastError: failing },
      Infinity,
      'critical',
    ],
    ['first load in flight', { ...base, remaining: 0, remainingCurrent: 0, currentSize: 0, nextReady: false, loads: 0 }, 0, 'warn'],
  ] as const)('tagHealth: %s → %s', (_name, s, cover, want) => {
    expect(tagHealth(s, cover).health).toBe(want);
  });
});

describe('GET /v1/status', () => {
  it('per tag: current [value, max), buffers, steps, loads, failures, rate, cover, health; store; version; no workers', async () => {
    const { app, service } = await setup();
    await service.createTag({ tag: 's', step: 100 });
    await app.inject('/v1/segment/s?count=20');
    const st = (await app.inject('/v1/status')).json() as Record<string, unknown> & { tags: Array<Record<string, unknown>> };
    expect(st).toMatchObject({
      version: '0.0.0',
      admin: true,
      store: { kind: 'memory', reachable: true, error: null },
      workers: [],
      errors: { byCode: {}, recent: [] },
      thresholds: { coverOkSeconds: 300, coverCriticalSeconds: 60 },
    });
    expect(typeof st.uptimeSeconds).toBe('number');
    expect(st.tags[0]).toMatchObject({
      tag: 's',
      health: 'ok',
      current: { start: '1', end: '101', next: '21', value: '21', max: '101', size: 100, remaining: 80 },
      next: { start: '101', end: '301', size: 200 },
      remaining: 280,
      nextReady: true,
      step: 200,
      storedStep: 100,
      loads: 2,
      loadFailures: 0,
      lastError: null,
      refusing: null,
      issued: 20,
      coverSeconds: null,
    });
    expect(typeof st.tags[0]?.lastLoadAt).toBe('string');
    expect(typeof st.tags[0]?.lastLoadMs).toBe('number');
  });

  it('shows the store unreachable and the tag red when the store fails with the buffers empty', async () => {
    const { app, service, store } = await setup();
    await service.createTag({ tag: 'down', step: 10 });
    await app.inject('/v1/segment/down?count=10');
    store.down = true;
    await app.inject('/v1/segment/down?count=1000');
    const st = (await app.inject('/v1/status')).json() as { store: Record<string, unknown>; tags: Array<Record<string, unknown>> };
    expect(st.store).toMatchObject({ reachable: false, error: 'STORE_UNAVAILABLE' });
    expect(st.tags[0]).toMatchObject({ tag: 'down', health: 'critical', remaining: 0, lastError: { code: 'STORE_UNAVAILABLE' } });
  });

  it('with an admin token: read-only summary without it, details with it, 403 for a wrong one', async () => {
    const { app } = await setup({ adminToken: 'secret-token-1' });
    await app.inject('/api/segment/get/nope');
    const ro = (await app.inject('/v1/status')).json() as {
      admin: boolean;
      errors: { byCode: object; recent: Array<Record<string, unknown>> };
    };
    expect(ro.admin).toBe(false);
    expect(ro.errors.byCode).toEqual({ TAG_NOT_FOUND: 1 });
    expect(ro.errors.recent[0]).toEqual({ at: expect.any(String), code: 'TAG_NOT_FOUND', status: 404 });
    const bad = await app.inject({ url: '/v1/status', headers: { authorization: 'Bearer wrong-token' } });
    expect(bad.statusCode).toBe(403);
    const full = (await app.inject({ url: '/v1/status', headers: { authorization: 'Bearer secret-token-1' } })).json() as typeof ro;
    expect(full.admin).toBe(true);
    expect(full.errors.recent.find((e) => e.code === 'TAG_NOT_FOUND')).toMatchObject({
      code: 'TAG_NOT_FOUND',
      method: 'GET',
      path: '/api/segment/get/nope',
      message: expect.any(String),
    });
  });
});

describe('GET /ui', () => {
  it('serves the page, its script and stylesheet under a strict CSP, with nothing from the internet', async () => {
    const { app } = await setup();
    const page = await app.inject('/ui');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain('<script src="/ui/app.js"></script>');
    expect(page.body).not.toMatch(/https?:\/\//);
    const js = await app.inject('/ui/app.js');
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.body).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect(() => new Function(UI_JS)).not.toThrow(); // it parses
    expect((await app.inject('/ui/app.css')).headers['content-type']).toMatch(/^text\/css/);
  });
});
