/**
 * End to end: the /ui page in a real Chromium (Debian's /usr/bin/chromium,
 * driven by playwright-core), against a real HTTP server listening on a port.
 *
 * The server runs in-process (buildApp + listen on port 0) over a
 * ControlledStore, so the test can take the store down at will; everything
 * the browser sees still goes over HTTP. A second suite checks that the built
 * `sequoia serve` (dist/) serves the page and the metrics too; a third loads
 * the page of a built server at 1400 × 900 (issue 39, item 7): ten tags, one
 * named with 64 characters, fit without a horizontal scroll bar, and the
 * snowflake card names its worker.
 *
 * Colours are checked against the page's own legend: a tag's pill must wear
 * the colour of exactly one legend entry, the one that describes its state.
 *
 * Screenshots are kept at test-artifacts/ui.png (docs/ui.png is a copy) and
 * test-artifacts/ui-1400.png.
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

/** What the page shows of a tag's colour: its pill's and its cover's colour, and the legend's swatches (runs in the page). */
interface Colours {
  readonly pill: string;
  readonly cover: string;
  readonly legend: ReadonlyArray<{ readonly state: string; readonly text: string; readonly colour: string }>;
}
const coloursOf = (page: Page, tag: string): Promise<Colours> =>
  // A string: this project's TypeScript has no DOM types.
  page.evaluate(`(() => {
    const row = [...document.querySelectorAll('#tags tbody tr')].find((r) => r.dataset.tag === ${JSON.stringify(tag)});
    const colour = (e, p) => (e ? getComputedStyle(e)[p] : 'none');
    return {
      pill: colour(row && row.querySelector('td.health .pill'), 'backgroundColor'),
      cover: colour(row && row.querySelector('td.cover'), 'color'),
      legend: [...document.querySelectorAll('#legend [data-state]')].map((i) => ({
        state: i.dataset.state,
        text: i.textContent,
        colour: colour(i.querySelector('.swatch'), 'backgroundColor'),
      })),
    };
  })()`);

/** The legend's entry whose swatch has the tag's colour: there must be exactly one, and the pill and cover wear it. */
function legendEntryOf(c: Colours): Colours['legend'][number] {
  const entries = c.legend.filter((i) => i.colour === c.pill);
  expect(entries, `legend entries coloured ${c.pill}: ${JSON.stringify(c.legend)}`).toHaveLength(1);
  expect(c.cover).toBe(c.pill);
  return entries[0] as Colours['legend'][number];
}

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
      viewport: { width: 1400, height: 900 },
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
    // Red, and the legend says red means this.
    const colours = await coloursOf(page, 'invoices');
    expect(colours.pill).toBe('rgb(198, 40, 40)');
    expect(legendEntryOf(colours).text).toMatch(/red.*store is failing/i);
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

  it('a reported business unique-key conflict marks the tag CONFLICT, in the colour the legend gives a conflict', async () => {
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
    // Issue 39, item 7: the row was painted red while the legend said red means a short cover.
    const colours = await coloursOf(page, 'orders');
    const entry = legendEntryOf(colours);
    expect(entry.state).toBe('conflict');
    expect(entry.text).toMatch(/conflict/);
    // The legend names the colour it shows, and no other state wears it.
    expect(entry.text).toMatch(/^\s*purple\b/i);
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

describeChromium('the page of a built server (dist/) in Chromium at 1400 × 900', () => {
  let server: ServerProcess | undefined;
  let dir: string;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  /** 64 characters and no place to break: the widest a tag of this length can be. */
  const long = `ui-fit-${process.pid}-${'0123456789'.repeat(7)}`.slice(0, 64);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-ui-fit-'));
    server = await startServe(['--store', `sqlite:${join(dir, 'ui.db')}`, '--state-dir', dir], { SEQUOIA_WORKERS: '1' });
    profile = mkdtempSync(join(tmpdir(), 'sequoia-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    server?.child.kill('SIGTERM');
    await server?.exited;
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ten tags, one named with 64 characters: no horizontal scroll, every column and every cell in view', async () => {
    const base = server?.url as string;
    expect(long).toHaveLength(64);
    const tags = [long, ...Array.from({ length: 9 }, (_, i) => `ui-fit-${i}`)];
    for (const tag of tags) {
      const created = await fetch(`${base}/v1/tags`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tag, step: 1_000_000 }),
      });
      expect(created.status).toBe(201);
      expect((await fetch(`${base}/v1/segment/${tag}?count=7`)).status).toBe(200);
    }
    // Reserves by several named clients widen the last column.
    for (const client of ['checkout-service-eu-west-1a', 'billing-worker-7', 'ledger-sync']) {
      expect((await fetch(`${base}/v1/segment/${long}?count=300&reserve=1&client=${client}`)).status).toBe(200);
    }
    await page.goto(`${base}/ui`);
    await expect.poll(() => page.locator('#tags tbody tr').count(), { timeout: 10_000 }).toBe(10);
    await expect
      .poll(() => page.locator(`#tags tr[data-tag="${long}"] td.reserves`).innerText(), { timeout: 10_000 })
      .toContain('ledger-sync');

    const m = (await page.evaluate(`(() => {
      const doc = document.documentElement;
      const table = document.getElementById('tags');
      const box = table.parentElement;
      const rect = (e) => { const r = e.getBoundingClientRect(); return { left: r.left, right: r.right, width: r.width }; };
      const row = [...table.tBodies[0].rows].find((r) => r.dataset.tag === ${JSON.stringify(long)});
      return {
        doc: { scroll: doc.scrollWidth, client: doc.clientWidth },
        box: { scroll: box.scrollWidth, client: box.clientWidth, ...rect(box) },
        columns: [...table.tHead.rows[0].cells].map((c) => ({ name: c.textContent, ...rect(c) })),
        cells: [...row.cells].map((c) => ({ name: c.className, scroll: c.scrollWidth, client: c.clientWidth, text: c.textContent, ...rect(c) })),
      };
    })()`)) as {
      doc: { scroll: number; client: number };
      box: { scroll: number; client: number; left: number; right: number };
      columns: Array<{ name: string; left: number; right: number; width: number }>;
      cells: Array<{ name: string; scroll: number; client: number; text: string; left: number; right: number; width: number }>;
    };
    // The page scrolls sideways neither as a whole nor in the table's own box.
    expect(m.doc.scroll, 'document scrollWidth').toBeLessThanOrEqual(m.doc.client);
    expect(m.box.scroll, "the table's container scrollWidth").toBeLessThanOrEqual(m.box.client);
    expect(m.columns.map((c) => c.name)).toEqual([
      'status',
      'tag',
      'current [value, max)',
      'current buffer',
      'next buffer',
      'remaining',
      'step (stored)',
      'rate /s',
      'rate, last minute',
      'cover',
      'last load',
      'load failures',
      'client reserves',
    ]);
    const right = Math.min(m.doc.client, m.box.right);
    for (const c of [...m.columns, ...m.cells]) {
      expect(c.width, `${c.name} has a width`).toBeGreaterThan(0);
      expect(c.left, `${c.name} starts in view`).toBeGreaterThanOrEqual(0);
      expect(c.right, `${c.name} ends in view (${right} px)`).toBeLessThanOrEqual(right + 0.5);
    }
    // Nothing is cut inside a cell either: the whole tag name is there.
    for (const c of m.cells) expect(c.scroll, `${c.name} shows all of its content`).toBeLessThanOrEqual(c.client);
    expect(m.cells.find((c) => c.name.startsWith('tag'))?.text).toBe(long);
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-artifacts', 'ui-1400.png'), fullPage: true });
  });

  it('the snowflake card names each worker: its layout and worker id, and "1 worker"', async () => {
    const base = server?.url as string;
    const status = (await (await fetch(`${base}/v1/status`)).json()) as { workers: Array<{ generator: string; workerId: number }> };
    expect(status.workers).toHaveLength(1);
    const w = status.workers[0] as { generator: string; workerId: number };
    if (!page.url().endsWith('/ui')) await page.goto(`${base}/ui`);
    const worker = page.locator(`#workers tr[data-worker-id="${w.workerId}"]`);
    await worker.waitFor({ timeout: 10_000 });
    expect(await worker.locator('td.layout').innerText()).toContain(w.generator);
    expect(await worker.locator('td.worker').innerText()).toBe(String(w.workerId));
    expect(await page.locator('#workers-count').innerText()).toBe('1 worker');
  });
});
