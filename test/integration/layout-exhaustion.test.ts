/**
 * A layout's end on real `sequoia serve` processes (issue 43), with the wall
 * clock set by libfaketime around Baidu uid-generator's end,
 * 2024-11-20T13:24:16Z: weeks before it the server warns at start and
 * reports under 30 days left; a server running across it hands out valid
 * IDs up to the last second, then refuses with ID_SPACE_EXHAUSTED (never a
 * wrapped or negative ID); one started after it refuses snowflake IDs and
 * serves the rest.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getLayout, decompose } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, startServe } from '../helpers/cli.js';
import { fakeClockMissing, SteppedClock } from '../helpers/fake-clock.js';
import { servicesRequired } from '../helpers/services.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const missing = fakeClockMissing();
if (missing && servicesRequired) throw new Error(`stepped-clock tests need libfaketime: ${missing}`);
if (missing) console.warn(`[sequoia tests] SKIPPING layout exhaustion under a set clock: ${missing}`);
const describeClock = describe.skipIf(missing !== undefined);

const layout = getLayout('uid-generator');
const END = layout.endsAtMs;
const MAX = (1n << 63n) - 1n;

async function setup(name: string): Promise<{ clock: SteppedClock; start: () => Promise<ServerProcess> }> {
  const dir = mkdtempSync(join(tmpdir(), `sequoia-${name}-`));
  dirs.push(dir);
  const clock = new SteppedClock(dir);
  const start = async () => {
    const args = ['--store', `sqlite:${join(dir, 'store.db')}`, '--state-dir', dir, '--snowflake-layout', 'uid-generator'];
    const s = await startServe(args, clock.env());
    running.push(s);
    return s;
  };
  return { clock, start };
}

const setClock = (clock: SteppedClock, at: number) => clock.set((at - Date.now()) / 1000);

async function snowflake(s: ServerProcess): Promise<{ status: number; ids?: string[]; code?: string }> {
  const r = await fetch(`${s.url}/v1/snowflake?count=50`);
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  return { status: r.status, ids: body.ids, code: body.error?.code };
}

async function stop(s: ServerProcess): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

describeClock('uid-generator around its end, 2024-11-20T13:24:16Z (libfaketime)', () => {
  it('19 days before: a start-up warning, the metric under 30 days, IDs issued', async () => {
    const { clock, start } = await setup('layout-warn');
    setClock(clock, Date.parse('2024-11-01T00:00:00Z'));
    const s = await start();
    const warning = s
      .output()
      .split('\n')
      .find((l) => l.includes('runs out of time bits soon'));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning!)).toMatchObject({ layout: 'uid-generator', endsAt: '2024-11-20T13:24:16.000Z' });
    const r = await snowflake(s);
    expect(r.status).toBe(200);
    for (const id of r.ids!) expect(decompose(layout, BigInt(id)).timestampMs).toBeGreaterThanOrEqual(Date.parse('2024-11-01T00:00:00Z'));
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    const left = Number(/^sequoia_layout_remaining_seconds\{generator="uid-generator"\} (\S+)$/m.exec(metrics)?.[1]);
    expect(left).toBeGreaterThan(19 * 86_400);
    expect(left).toBeLessThan(30 * 86_400);
    await stop(s);
  }, 60_000);

  it('a server running across the end: valid IDs to the last second, then ID_SPACE_EXHAUSTED, never a wrapped ID', async () => {
    const { clock, start } = await setup('layout-cross');
    // The clock is not stepped while the server runs: a step forward makes its worker lease look expired (LEASE_LOST).
    setClock(clock, END - 45_000);
    const s = await start();
    expect((await snowflake(s)).status).toBe(200);
    for (const until = performance.now() + 90_000; performance.now() < until;) {
      const date = Date.parse((await fetch(`${s.url}/healthz`)).headers.get('date') ?? '');
      if (date >= END - 2_000) break;
    }
    const seen = new Set<string>();
    let refused: { status: number; code?: string } | undefined;
    // Requests until the clock passes the end (about 2 s): every ID before it valid and on a tick up to the last.
    for (let i = 0; i < 100_000 && refused === undefined; i++) {
      const r = await snowflake(s);
      if (r.status !== 200) {
        refused = r;
        break;
      }
      for (const id of r.ids!) {
        const n = BigInt(id);
        expect(n >= 0n && n <= MAX, id).toBe(true);
        expect(decompose(layout, n).tick).toBeLessThanOrEqual(layout.maxTick);
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
    }
    expect(refused).toEqual({ status: 503, code: 'ID_SPACE_EXHAUSTED', ids: undefined });
    expect([...seen].some((id) => decompose(layout, BigInt(id)).tick === layout.maxTick)).toBe(true);
    for (let i = 0; i < 5; i++) expect(await snowflake(s)).toMatchObject({ status: 503, code: 'ID_SPACE_EXHAUSTED' });
    await stop(s);
  }, 120_000);

  it('a server started after the end refuses snowflake IDs with ID_SPACE_EXHAUSTED and serves the rest', async () => {
    const { clock, start } = await setup('layout-past');
    setClock(clock, END + 1_000);
    const s = await start();
    expect(s.output()).toContain('ID_SPACE_EXHAUSTED');
    expect(await snowflake(s)).toMatchObject({ status: 503, code: 'ID_SPACE_EXHAUSTED' });
    expect((await fetch(`${s.url}/v1/uuid`)).status).toBe(200);
    await stop(s);
  }, 60_000);
});
