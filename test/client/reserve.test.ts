/**
 * The client's reserve against real `sequoia serve` processes (dist/): a
 * client drawing IDs at a steady rate, every server SIGKILLed: it keeps
 * issuing from its reserve, then refuses with RESERVE_EXHAUSTED (nothing
 * invented); a server restarted: it resumes and replaces its reserve. Every
 * ID ever returned, by this client and by another one drawing from the
 * restarted server, is unique.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReserveEvent, createClient, SequoiaError } from '../../src/client/index.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);
let dir: string;
let db: string;

beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
  dir = mkdtempSync(join(tmpdir(), 'sequoia-reserve-'));
  db = `sqlite:${join(dir, 'ids.db')}`;
  expect(sequoia(['tag', 'create', 'steady', '--step', '100', '--store', db], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(0);
});

afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  for (const s of running) s.child.kill('SIGKILL');
});

async function serve(state: string, extra: string[] = []): Promise<ServerProcess> {
  const s = await startServe(['--store', db, '--state-dir', join(dir, state), '--workers', '1', ...extra]);
  running.push(s);
  return s;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('client reserve against real servers', () => {
  it('every server killed: issues from the reserve, then refuses with RESERVE_EXHAUSTED; a server back: resumes and replaces the reserve; no repeat', async () => {
    const a = await serve('a');
    const b = await serve('b');
    const events: ReserveEvent[] = [];
    const client = createClient({
      urls: [a.url, b.url],
      batch: { initial: 20, min: 10, max: 200, targetMs: 300 },
      timeoutMs: 1000,
      retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 50 },
      reserve: { seconds: 2, min: 150, max: 3000, probeMs: 200 },
      onReserve: (e) => events.push(e),
    });
    const seen: bigint[] = [];
    const codes: string[] = [];
    let stop = false;
    // One caller at a steady pace (about 200 IDs/s when the machine keeps up).
    const caller = (async () => {
      while (!stop) {
        try {
          seen.push(await client.next('steady'));
        } catch (e) {
          codes.push(e instanceof SequoiaError ? e.code : String(e));
        }
        await sleep(5);
      }
    })();

    // The reserve is taken while servers answer, and not used.
    await expect.poll(() => client.stats().tags.steady?.reserve ?? 0, { timeout: 20_000 }).toBeGreaterThanOrEqual(150);
    await sleep(500);
    expect(client.stats().servedFromReserve).toBe(0);
    expect(codes).toEqual([]);

    a.child.kill('SIGKILL');
    b.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    expect(await b.exited).toBe('SIGKILL');
    const atKill = client.stats().tags.steady!;
    const seenAtKill = seen.length;
    expect(atKill.reserve).toBeGreaterThanOrEqual(150);

    // Buffer, then reserve, then refusals.
    await expect.poll(() => client.stats().refusals, { timeout: 60_000 }).toBeGreaterThan(0);
    const dry = client.stats();
    expect(dry.servedFromReserve).toBe(atKill.reserve); // every reserved ID was served before the first refusal
    expect(dry.tags.steady?.state).toBe('exhausted');
    expect(seen.length - seenAtKill).toBeGreaterThanOrEqual(atKill.reserve + atKill.buffered); // it kept issuing after the kill
    await sleep(500);
    expect(new Set(codes)).toEqual(new Set(['RESERVE_EXHAUSTED'])); // refusals only, with the stable code
    const seenWhileDry = seen.length;
    await sleep(300);
    expect(seen.length).toBe(seenWhileDry); // nothing invented while refusing
    expect(events.map((e) => e.state)).toEqual(['using', 'exhausted']);
    expect(dry.msOnReserve).toBeGreaterThan(0);

    // One server back on its port: the client resumes and replaces its reserve.
    const a2 = await serve('a', ['--port', new URL(a.url).port]);
    expect(a2.url).toBe(a.url);
    await expect.poll(() => seen.length, { timeout: 30_000 }).toBeGreaterThan(seenWhileDry + 50);
    await expect.poll(() => events.map((e) => e.state), { timeout: 30_000 }).toEqual(['using', 'exhausted', 'replenished']);
    const back = client.stats().tags.steady!;
    expect(back.state).toBe('serving');
    expect(back.reserve).toBeGreaterThanOrEqual(150);
    const refusalsBack = client.stats().refusals;
    await sleep(500);
    expect(client.stats().refusals).toBe(refusalsBack);

    // Another client on the restarted server: the union has no repeat (the reserve was the first client's alone).
    const other = createClient({ url: a2.url, reserve: false });
    const others = await other.nextBatch('steady', 5000);
    await other.close();

    stop = true;
    await caller;
    await client.close();
    const all = [...seen, ...others];
    expect(new Set(all).size).toBe(all.length);
    expect(unhandled).toEqual([]);
    a2.child.kill('SIGTERM');
    expect(await a2.exited).toBe(0);
  }, 180_000);
});
