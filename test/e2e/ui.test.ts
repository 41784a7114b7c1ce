/**
 * End to end: the /ui page in a real Chromium (Debian's /usr/bin/chromium,
 * driven by playwright-core), against a real HTTP server listening on a port.
 *
 * The server runs in-process (buildApp + listen on port 0) over a
 * ControlledStore, so the test can take the store down at will; everything
 * the browser sees still goes over HTTP. A second suite checks that the built
 * `sequoia serve` (dist/) serves the page and the metrics too.
 *
 * The screenshot is kept at test-artifacts/ui.png (path printed in the output).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../../src/adapters/memory/memory-high-water-mark-store.js';
import { buildApp } from '../../src/server/build-app.js';
import { SequoiaMetrics } from '../../src/server/metrics.js';
import { IdService } from '../../src/service/id-service.js';
import { ROOT, startServe, type ServerProcess } from '../helpers/cli.js';
import { ControlledStore } from '../helpers/fakes.js';
import { describeWithService } from '../helpers/services.js';

const CHROMIUM = process.env.SEQUOIA_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'e2e-admin-token';
const SCREENSHOT = join(ROOT, 'test-artifacts', 'ui.png');
/** The flags this machine's Chromium needs (no sandbox as root, no network chatter). */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const describeChromium = await describeWithService('chromium', async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found (apt-get install chromium)`);
  execFileSync(CHROMIUM, ['--version'], { timeout: 20_000 });
});

describeChromium('monitoring page in Chromium', () => {
  let app: FastifyInstance;
  let url: string;
  let store: ControlledStore;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let traffic: NodeJS.Timeout | undefined;

  const call = async (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, init);
  const admin = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const row = (tag: string) => page.locator(`#tags tr[data-tag="${tag}"]`);
  const remainingOf = async (tag: string) => Number((await row(tag).locator('td.remaining').innerText()).replace(/,/g, ''));

  beforeAll(async () => {
    store = new ControlledStore();
    const metrics = new SequoiaMetrics();
    const service = new IdService({
      store,
      marks: new MemoryHighWaterMarkStore(),
      refreshIntervalMs: 0,
      allocator: { loadTimeoutMs: 300, minRetryDelayMs: 50, maxRetryDelayMs: 500 },
      onLoad: metrics.onLoad,
    });
    await service.start();
    app = await buildApp({ service, metrics, adminToken: TOKEN, version: 'e2e' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    profile = mkdtempSync(join(tmpdir(), 'sequoia-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1500, height: 760 },
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    if (traffic) clearInterval(traffic);
    await context?.close();
    await app?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('lists a tag created during the test, its remaining count falls as IDs are drawn, and a store outage turns it red', async () => {
    await page.goto(`${url}/ui`);
    await expect.poll(() => page.locator('#conn').innerText(), { timeout: 10_000 }).toBe('live');
    // A token is configured: without one, a summary without tags.
    expect(await page.locator('#mode').innerText()).toBe('summary view');
    expect(await page.locator('#no-tags').innerText()).toContain('admin or the metrics token');

    // The admin token typed into the page unlocks the tags and the details.
    await page.fill('#token', TOKEN);
    await page.click('#token-form button[type=submit]');
    await expect.poll(() => page.locator('#mode').innerText(), { timeout: 10_000 }).toBe('admin view');

    // A busy, healthy tag for contrast, drawn from in the background.
    expect((await call('/v1/tags', { method: 'POST', headers: admin, body: JSON.stringify({ tag: 'orders', step: 100000 }) })).status).toBe(
      201,
    );
    traffic = setInterval(() => void call('/v1/segment/orders?count=25').catch(() => {}), 100);

    // The tag under test, created now.
    const created = await call('/v1/tags', { method: 'POST', headers: admin, body: JSON.stringify({ tag: 'invoices', step: 1000 }) });
    expect(created.status).toBe(201);
    expect((await call('/v1/segment/invoices?count=1')).status).toBe(200);
    await row('invoices').waitFor({ timeout: 10_000 });
    await expect.poll(() => remainingOf('invoices'), { timeout: 10_000 }).toBe(999);
    expect(await row('invoices').getAttribute('data-health')).not.toBe('critical');

    // Drawing IDs (staying under the 10% prefetch point) brings the count down.
    expect((await call('/v1/segment/invoices?count=60')).status).toBe(200);
    await expect.poll(() => remainingOf('invoices'), { timeout: 10_000 }).toBe(939);
    expect((await call('/api/segment/get/invoices')).status).toBe(200);
    await expect.poll(() => remainingOf('invoices'), { timeout: 10_000 }).toBe(938);

    // Store outage: loads fail, and the buffers run dry (drawn exactly, then one more).
    store.down = true;
    const status = (await (await call('/v1/status', { headers: admin })).json()) as { tags: Array<{ tag: string; remaining: number }> };
    const left = status.tags.find((t) => t.tag === 'invoices')?.remaining ?? 0;
    expect((await call(`/v1/segment/invoices?count=${left}`)).status).toBe(200);
    const refused = await call('/v1/segment/invoices?count=1');
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('SEGMENTS_EXHAUSTED');
    await expect.poll(() => remainingOf('invoices'), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => row('invoices').locator('td.health').getAttribute('title'), { timeout: 10_000 }).toMatch(/store failing/);
    expect(await row('invoices').getAttribute('data-health')).toBe('critical');
    const pill = row('invoices').locator('td.health .pill');
    expect(await pill.innerText()).toBe('CRITICAL');
    // Runs in the page (this project's TypeScript has no DOM types).
    const background = (e: unknown) =>
      (globalThis as unknown as { getComputedStyle(x: unknown): { backgroundColor: string } }).getComputedStyle(e).backgroundColor;
    expect(await pill.evaluate(background)).toBe('rgb(198, 40, 40)'); // red
    await expect.poll(() => page.locator('#store-card').getAttribute('data-reachable'), { timeout: 10_000 }).toBe('false');
    await expect.poll(() => page.locator('#errors tr[data-code="SEGMENTS_EXHAUSTED"] td.num').innerText(), { timeout: 10_000 }).toBe('1');
    expect(await page.locator('#recent tbody').innerText()).toContain('SEGMENTS_EXHAUSTED');
    // The busy tag still has its buffers: not red.
    expect(await row('orders').getAttribute('data-health')).not.toBe('critical');

    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`[sequoia e2e] /ui screenshot: ${SCREENSHOT}`);

    // The store comes back: the tag recovers by itself (its cover may stay short
    // for a while after the burst above, but the store failure is gone).
    store.down = false;
    await expect.poll(async () => (await call('/v1/segment/invoices?count=1')).status, { timeout: 10_000 }).toBe(200);
    await expect.poll(() => row('invoices').locator('td.health').getAttribute('title'), { timeout: 10_000 }).not.toMatch(/store failing/);
    await expect.poll(() => page.locator('#store-card').getAttribute('data-reachable'), { timeout: 10_000 }).toBe('true');
  });

  it('lists the clients that took a reserve of a tag (the SDK marks those batches), with address and range for the admin', async () => {
    expect((await call('/v1/segment/orders?count=300&reserve=1&client=billing-7')).status).toBe(200);
    expect((await call('/v1/segment/orders?count=200&reserve=1')).status).toBe(200); // no name: "-"
    const cell = row('orders').locator('td.reserves');
    await expect.poll(() => cell.innerText(), { timeout: 10_000 }).toBe('-, billing-7: 500');
    const title = (await cell.getAttribute('title')) ?? '';
    expect(title).toMatch(/^- \(127\.0\.0\.1\): 200 IDs \[\d+\.\.\d+\]/);
    expect(title).toMatch(/\nbilling-7 \(127\.0\.0\.1\): 300 IDs/);
    // A bad mark is a 400, never a crash or a silent name.
    const bad = await call('/v1/segment/orders?count=1&reserve=1&client=a%20b');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('INVALID_ARGUMENT');
    expect((await call('/v1/segment/orders?count=1&client=x')).status).toBe(400);
    // /v1/status says the same; the addresses only to the admin.
    const body = (await (await call('/v1/status', { headers: admin })).json()) as {
      tags: Array<{ tag: string; reserves: Array<{ client: string; address?: string; ids: number }> }>;
    };
    expect(body.tags.find((t) => t.tag === 'orders')?.reserves.map((r) => [r.client, r.address, r.ids])).toEqual([
      ['-', '127.0.0.1', 200],
      ['billing-7', '127.0.0.1', 300],
    ]);
  });

  it('a reported business unique-key conflict turns the tag red with CONFLICT', async () => {
    // The busy tag of the test above is healthy until a client reports a conflict on one of its IDs.
    await expect.poll(() => row('orders').getAttribute('data-health'), { timeout: 10_000 }).not.toBe('critical');
    const r = await call('/v1/tags/orders/conflicts', {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ id: '12345', detail: 'orders_pkey' }),
    });
    expect(r.status).toBe(202);
    await expect.poll(() => row('orders').getAttribute('data-health'), { timeout: 10_000 }).toBe('critical');
    const pill = row('orders').locator('td.health .pill');
    expect(await pill.innerText()).toBe('CONFLICT 1');
    expect(await row('orders').locator('td.health').getAttribute('title')).toMatch(/business unique-key conflict/);
    const background = (e: unknown) =>
      (globalThis as unknown as { getComputedStyle(x: unknown): { backgroundColor: string } }).getComputedStyle(e).backgroundColor;
    expect(await pill.evaluate(background)).toBe('rgb(198, 40, 40)'); // red
  });
});

describe('the built server (dist/) serves the page and the metrics', () => {
  let server: ServerProcess | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-ui-dist-'));
    // One process: under node:cluster each worker keeps its own metrics and status.
    server = await startServe(['--store', `sqlite:${join(dir, 'ui.db')}`, '--state-dir', dir], { SEQUOIA_WORKERS: '1' });
  });

  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('GET /ui, /ui/app.js, /metrics and /v1/status from dist/', async () => {
    const base = server?.url as string;
    const page = await fetch(`${base}/ui`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/ui/app.js');
    expect((await fetch(`${base}/ui/app.js`)).status).toBe(200);
    expect(
      (await fetch(`${base}/v1/tags`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tag":"d","step":10}' }))
        .status,
    ).toBe(201);
    expect((await fetch(`${base}/v1/segment/d?count=3`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^sequoia_ids_issued_total\{generator="segment",tag="d"\} 3$/m);
    expect(metrics).toMatch(/^sequoia_segment_load_seconds_count\{tag="d"\} [1-9]/m);
    const status = (await (await fetch(`${base}/v1/status`)).json()) as { store: { kind: string; reachable: boolean }; tags: unknown[] };
    expect(status.store).toMatchObject({ kind: 'sqlite', reachable: true });
    expect(status.tags).toHaveLength(1);
  });
});
