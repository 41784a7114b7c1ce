/**
 * Issue 22 "Prove it": 3 real servers and 4 SDK clients (each its own
 * process) under continuous load on two tags, one plain and one with a
 * fallback space; every server SIGKILLed for a while, then started again.
 * - the plain tag: clients issue from their reserve while it lasts, then
 *   refuse with RESERVE_EXHAUSTED (nothing invented), and resume once the
 *   servers are back;
 * - the fallback tag: clients never refuse: reserve, then IDs from 2^62 under
 *   their leased worker id;
 * - the union of every ID every client and server issued has no repeat;
 * - the servers' status pages name the clients holding reserves.
 * The outage is a few seconds (the issue's 60 s / 5 min scaled down: the
 * reserve covers 2 s of a client's rate, the fallback lease 120 s: a loaded machine may take many seconds to start servers again).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FALLBACK_FLOOR, decodeFallbackId } from '../../src/core/fallback/fallback-space.js';
import { BIN, type ServerProcess, assertBuilt, launchServe, sequoia } from '../helpers/cli.js';

const CHILD = fileURLToPath(new URL('../helpers/outage-client.mjs', import.meta.url));
const suffix = Math.random().toString(36).slice(2, 8);
const PLAIN = `outage-plain-${suffix}`;
const FB = `outage-fb-${suffix}`;
const running: ServerProcess[] = [];
const clients: Client[] = [];
let dir: string;
let db: string;

interface Stats {
  servedFromReserve: number;
  servedFromFallback: number;
  refusals: number;
  tags: Record<string, { reserve: number; state: string; fallbackWorkerId?: number }>;
}
interface Client {
  readonly child: ChildProcess;
  readonly ids: Record<string, bigint[]>;
  codes: Record<string, Record<string, number>>;
  stats: Stats | undefined;
  readonly done: Promise<void>;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-outage-'));
  db = `sqlite:${join(dir, 'ids.db')}`;
  for (const t of [PLAIN, FB])
    expect(sequoia(['tag', 'create', t, '--step', '200', '--store', db], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(0);
});

afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const c of clients) c.child.kill('SIGKILL');
});

async function serve(state: string, port = '0'): Promise<ServerProcess> {
  assertBuilt();
  // Three servers starting at once beside four busy clients: on a loaded 2-core machine a start can take long.
  const s = await launchServe(
    process.execPath,
    [
      BIN,
      'serve',
      '--store',
      db,
      '--state-dir',
      join(dir, state),
      '--workers',
      '1',
      '--fallback-tags',
      FB,
      '--fallback-lease-ttl-ms',
      '120000',
      '--port',
      port,
    ],
    { startTimeoutMs: 120_000 },
  );
  running.push(s);
  return s;
}

function startClient(urls: string[]): Client {
  const child = spawn(
    process.execPath,
    [CHILD, JSON.stringify({ urls, tags: [PLAIN, FB], reserve: { seconds: 2, min: 200, max: 5000, probeMs: 300 }, fallback: true })],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const c: Client = {
    child,
    ids: { [PLAIN]: [], [FB]: [] },
    codes: {},
    stats: undefined,
    done: new Promise((resolve) => child.once('exit', () => resolve())),
  };
  let rest = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    rest += chunk;
    const lines = rest.split('\n');
    rest = lines.pop()!;
    for (const l of lines) {
      const m = JSON.parse(l) as { ids?: Record<string, string[]>; codes?: Client['codes']; stats?: Stats };
      if (m.ids === undefined) continue;
      for (const [t, list] of Object.entries(m.ids)) for (const id of list) c.ids[t]!.push(BigInt(id));
      c.codes = m.codes!;
      c.stats = m.stats;
    }
  });
  clients.push(c);
  return c;
}

async function drawFrom(url: string, tag: string, count: number): Promise<bigint[]> {
  const res = await fetch(`${url}/v1/segment/${tag}?count=${count}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { ids: string[] }).ids.map((s) => BigInt(s));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const refusalsOf = (c: Client, tag: string) => c.codes[tag]?.RESERVE_EXHAUSTED ?? 0;

describe('outage of every server: reserve, then pause or the fallback space; no repeat', () => {
  it('3 servers, 4 client processes: the plain tag pauses, the fallback tag keeps issuing; both resume; the union has no repeat', async () => {
    const servers = await Promise.all(['a', 'b', 'c'].map((s) => serve(s)));
    const urls = servers.map((s) => s.url);
    for (let i = 0; i < 4; i++) startClient(urls);

    // Load flows; every client holds a reserve of both tags and a fallback worker id.
    await expect
      .poll(
        () =>
          clients.every(
            (c) =>
              (c.stats?.tags[PLAIN]?.reserve ?? 0) >= 200 &&
              (c.stats?.tags[FB]?.reserve ?? 0) >= 200 &&
              c.stats?.tags[FB]?.fallbackWorkerId !== undefined,
          ),
        { timeout: 30_000, interval: 200 },
      )
      .toBe(true);
    expect(clients.every((c) => c.stats!.tags[PLAIN]!.fallbackWorkerId === undefined)).toBe(true); // no fallback space: no lease
    const workerIds = clients.map((c) => c.stats!.tags[FB]!.fallbackWorkerId);
    expect(new Set(workerIds).size).toBe(4); // one fallback worker id per client
    // Each server's status page lists the clients that took a reserve from it: together, all four.
    const holders = new Set<string>();
    for (const s of servers) {
      const st = (await (await fetch(`${s.url}/v1/status`)).json()) as {
        tags: Array<{ tag: string; reserves: Array<{ client: string; ids: number }> }>;
      };
      for (const r of st.tags.find((t) => t.tag === PLAIN)?.reserves ?? []) {
        expect(r.ids).toBeGreaterThan(0);
        holders.add(r.client);
      }
    }
    expect(holders.size).toBe(4);
    // Servers issue too (their IDs go into the union).
    const byServers: bigint[] = [];
    for (const s of servers) for (const t of [PLAIN, FB]) byServers.push(...(await drawFrom(s.url, t, 500)));

    for (const s of servers) s.child.kill('SIGKILL');
    for (const s of servers) expect(await s.exited).toBe('SIGKILL');
    const atKill = clients.map((c) => ({ plain: c.ids[PLAIN]!.length, fb: c.ids[FB]!.length }));
    // Failures before the kill (a first batch timing out on a loaded machine, before any reserve) are not the outage's.
    const codesAtKill = clients.map((c) => structuredClone(c.codes));
    const newCodes = (i: number, tag: string): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const [code, n] of Object.entries(clients[i]!.codes[tag] ?? {})) {
        const d = n - (codesAtKill[i]![tag]?.[code] ?? 0);
        if (d > 0) out[code] = d;
      }
      return out;
    };

    // The plain tag: buffer, reserve, then RESERVE_EXHAUSTED in every client; nothing issued while refusing.
    await expect.poll(() => clients.every((c) => refusalsOf(c, PLAIN) > 0), { timeout: 30_000, interval: 200 }).toBe(true);
    const dry = clients.map((c) => c.ids[PLAIN]!.length);
    await sleep(1000);
    clients.forEach((c, i) => {
      expect(c.ids[PLAIN]!.length).toBe(dry[i]); // paused
      expect(c.ids[PLAIN]!.length).toBeGreaterThan(atKill[i]!.plain); // it kept issuing after the kill, from buffer and reserve
      expect(Object.keys(newCodes(i, PLAIN))).toEqual(['RESERVE_EXHAUSTED']);
      expect(c.stats!.tags[PLAIN]!.state).toBe('exhausted');
    });

    // The fallback tag: still issuing, from 2^62, with no refusal at all.
    clients.forEach((c, i) => {
      expect(newCodes(i, FB)).toEqual({});
      expect(c.stats!.tags[FB]!.state).toBe('fallback');
      expect(c.stats!.servedFromFallback).toBeGreaterThan(0);
      expect(c.ids[FB]!.length).toBeGreaterThan(atKill[i]!.fb);
      const fallbackIds = c.ids[FB]!.filter((id) => id >= FALLBACK_FLOOR);
      expect(fallbackIds.length).toBe(c.stats!.servedFromFallback);
      for (const id of fallbackIds) expect(decodeFallbackId(id)!.workerId).toBe(workerIds[i]);
    });

    // Servers back on their ports: both tags resume from the servers.
    const back = await Promise.all(servers.map((s, i) => serve(['a', 'b', 'c'][i]!, new URL(s.url).port)));
    expect(back.map((s) => s.url)).toEqual(urls);
    const atBack = clients.map((c) => ({ plain: c.ids[PLAIN]!.length, fb: c.ids[FB]!.length }));
    await expect
      .poll(() => clients.every((c, i) => c.ids[PLAIN]!.length > atBack[i]!.plain + 50 && c.stats?.tags[FB]?.state === 'serving'), {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(true);
    const fbServedAtBack = clients.map((c) => c.stats!.servedFromFallback);
    await sleep(500);
    clients.forEach((c, i) => {
      expect(c.stats!.tags[PLAIN]!.state).toBe('serving');
      expect(c.stats!.servedFromFallback).toBe(fbServedAtBack[i]); // no fallback ID while servers answer
      expect(newCodes(i, FB)).toEqual({});
    });
    for (const s of back) for (const t of [PLAIN, FB]) byServers.push(...(await drawFrom(s.url, t, 500)));

    for (const c of clients) c.child.kill('SIGTERM');
    await Promise.all(clients.map((c) => c.done));

    // Per tag (a namespace), every ID once: clients' and servers'.
    const plainAll = [...clients.flatMap((c) => c.ids[PLAIN]!)];
    const fbAll = [...clients.flatMap((c) => c.ids[FB]!)];
    const serverPlain = byServers.filter((_, i) => Math.floor(i / 500) % 2 === 0);
    const serverFb = byServers.filter((_, i) => Math.floor(i / 500) % 2 === 1);
    for (const all of [
      [...plainAll, ...serverPlain],
      [...fbAll, ...serverFb],
    ])
      expect(new Set(all).size).toBe(all.length);
    expect(plainAll.every((id) => id < FALLBACK_FLOOR)).toBe(true);
    expect(serverFb.every((id) => id < FALLBACK_FLOOR)).toBe(true); // servers never issue in the fallback space
  }, 120_000);
});
