/**
 * Planned restarts cost the SDK's callers nothing (issue 22, part 3): the
 * drain order of one server on SIGTERM (not ready and answers marked
 * draining first, then stop accepting, finish, give back, exit 0); three
 * `sequoia serve` processes on one SQLite file restarted one at a time,
 * twice, under several SDK clients with no reserve: no call fails and no ID
 * repeats; the same for the workers of one `--workers 2` server replaced one
 * at a time behind its single URL.
 */
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, type SequoiaClient } from '../../src/client/index.js';
import { BIN, assertBuilt, launchServe, type ServerProcess } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';

const running = new Set<ServerProcess>();
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function serve(port: number, args: string[]): Promise<ServerProcess> {
  assertBuilt();
  const s = await launchServe(process.execPath, [
    BIN,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--log-level',
    'info',
    ...args,
  ]);
  running.add(s);
  void s.exited.then(() => running.delete(s));
  return s;
}

/** Log lines (JSON) of the server so far with this msg. */
function lines(s: ServerProcess, msg: string): Record<string, unknown>[] {
  return s
    .output()
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function ready(url: string): Promise<void> {
  await expect
    .poll(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status, { timeout: 30_000, interval: 100 })
    .toBe(200);
}

async function createTag(url: string, tag: string, step: number): Promise<void> {
  const res = await fetch(`${url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tag, step }),
  });
  expect(res.status).toBe(201);
}

/**
 * SDK clients under continuous load until stop(): single IDs, batches larger
 * than the buffer (fetched directly), and one client on Leaf's one-ID route.
 * Every ID and every failed call is kept.
 */
function load(urls: string[], tag: string, clients: number) {
  const ids: string[] = [];
  const failures: string[] = [];
  let stopped = false;
  const sdks: SequoiaClient[] = [];
  // Every attempt that did not succeed, of every client (`c<n> <ms since start> <url> <what>`), so a
  // failed call or a stall shows what the attempts met.
  const missed: string[] = [];
  const t0 = performance.now();
  const loops = Array.from({ length: clients }, async (_, c) => {
    // No reserve: a call that no server answered would fail here instead of being served from it.
    const recording: typeof fetch = async (input, init) => {
      const at = `c${c} ${Math.round(performance.now() - t0)}ms ${String(input).replace(/\?.*/, '')}`;
      try {
        const res = await fetch(input, init);
        if (res.status >= 300) missed.push(`${at} ${res.status} retry-after=${res.headers.get('retry-after')} ${await res.clone().text()}`);
        return res;
      } catch (e) {
        missed.push(`${at} ${String((e as { cause?: unknown }).cause ?? e)}`);
        throw e;
      }
    };
    const sdk = createClient({
      urls: [...urls.slice(c % urls.length), ...urls.slice(0, c % urls.length)],
      fetch: recording,
      reserve: false,
      mode: c === clients - 1 ? 'leaf' : 'segment',
      batch: { initial: 10, min: 1, max: 50, targetMs: 100 },
    });
    sdks.push(sdk);
    while (!stopped) {
      try {
        if (Math.random() < 0.4) {
          for (const id of await sdk.nextBatch(tag, 1 + Math.floor(Math.random() * 60))) ids.push(id.toString());
        } else {
          for (let k = 0; k < 5; k++) ids.push((await sdk.next(tag)).toString());
        }
      } catch (e) {
        failures.push(
          `${e instanceof Error ? `${(e as { code?: string }).code ?? ''} ${e.message}` : String(e)}; attempts that missed: ${missed
            .filter((m) => m.startsWith(`c${c} `))
            .slice(-8)
            .join(' | ')}`,
        );
      }
      await sleep(2); // timers and sockets get their turn
    }
  });
  return {
    ids,
    failures,
    count: () => ids.length,
    /** Passes once more IDs than `before` were returned; otherwise fails saying what the attempts met. */
    progressed: async (before: number) => {
      try {
        await expect.poll(() => ids.length, { timeout: 10_000, interval: 50 }).toBeGreaterThan(before);
      } catch (e) {
        throw new Error(
          `no ID returned for 10 s (at ${Math.round(performance.now() - t0)} ms); failed calls: ${JSON.stringify(failures.slice(-5))}; last attempts that missed: ${JSON.stringify(missed.slice(-20))}`,
          { cause: e },
        );
      }
    },
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      await Promise.all(sdks.map((s) => s.close()));
    },
  };
}

function repeats(ids: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice: string[] = [];
  for (const id of ids) {
    if (seen.has(id)) twice.push(id);
    seen.add(id);
  }
  return twice;
}

describe('rolling restarts', () => {
  it('SIGTERM: /readyz 503 and answers marked draining first; then stop accepting, finish, give back, exit 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-drain-'));
    const store = `sqlite:${join(dir, 'ids.db')}`;
    const port = await freePort();
    const args = ['--store', store, '--state-dir', join(dir, 'state'), '--drain-delay-ms', '3000'];
    const s = await serve(port, args);
    await createTag(s.url, 'drained', 100);
    const first = (await (await fetch(`${s.url}/v1/segment/drained?count=3`)).json()) as { ids: string[] };
    const last = BigInt(first.ids[2]!);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);

    s.child.kill('SIGTERM');
    await expect.poll(async () => (await fetch(`${s.url}/readyz`)).status, { timeout: 2000, interval: 20 }).toBe(503);
    const notReady = await fetch(`${s.url}/readyz`);
    expect(notReady.headers.get('sequoia-draining')).toBe('1');
    expect(((await notReady.json()) as { error: { code: string } }).error.code).toBe('SHUTTING_DOWN');
    // Still answering while it drains, marked so the SDK moves away, and closing the connection.
    const during = await fetch(`${s.url}/v1/segment/drained?count=1`);
    expect(during.status).toBe(200);
    expect(during.headers.get('sequoia-draining')).toBe('1');
    expect(during.headers.get('connection')).toBe('close');
    expect(((await during.json()) as { ids: string[] }).ids).toEqual([String(last + 1n)]);

    expect(await s.exited).toBe(0);
    const order = ['draining: /readyz answers 503', 'requests finished', 'ranges given back', 'stopped'].map((msg) =>
      s.output().indexOf(`"msg":"${msg}"`),
    );
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);

    // The unused range was given back: the next server goes on at the next ID.
    const again = await serve(port, args);
    const next = (await (await fetch(`${again.url}/v1/segment/drained?count=1`)).json()) as { ids: string[] };
    expect(next.ids).toEqual([String(last + 2n)]);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 60_000);

  it('a request in flight when SIGTERM arrives is answered before the server exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-inflight-'));
    const port = await freePort();
    const s = await serve(port, ['--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', join(dir, 'state')]);
    // A request whose body is still coming: the server has it (headers parsed) and cannot answer it yet.
    const body = JSON.stringify({ tag: 'inflight', step: 10 });
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', r));
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    const ended = new Promise<void>((r) => socket.once('close', () => r()));
    socket.write(
      `POST /v1/tags HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await sleep(1000);
    s.child.kill('SIGTERM');
    // Not accepting any more, but still waiting for the rest of that request.
    await expect.poll(() => s.output().includes('"msg":"draining: /readyz answers 503"'), { timeout: 10_000, interval: 20 }).toBe(true);
    await sleep(500);
    expect(s.output()).not.toContain('"msg":"requests finished"');
    socket.end(body.slice(5));
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer).toContain('"inflight"');
    expect(await s.exited).toBe(0);
  }, 60_000);

  it('3 servers on one store, 5 SDK clients: two rolling restarts, no failed call, no repeat', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-rolling-'));
    const store = `sqlite:${join(dir, 'ids.db')}`;
    const ports = await Promise.all([0, 1, 2].map(() => freePort()));
    // Round 1 stops with the default (no drain delay): the SDK meets SHUTTING_DOWN and refused connections.
    // The servers it starts drain for 500 ms, so round 2 stops with answers marked draining first.
    const args = (i: number, drainMs: number) => [
      '--store',
      store,
      '--state-dir',
      join(dir, `state${i}`),
      '--max-step',
      '64',
      '--drain-delay-ms',
      String(drainMs),
    ];
    const servers = await Promise.all(ports.map((p, i) => serve(p, args(i, 0))));
    await createTag(servers[0]!.url, 'rolling', 16);
    const urls = servers.map((s) => s.url);
    const l = load(urls, 'rolling', 5);
    try {
      await sleep(1000);
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < servers.length; i++) {
          const before = l.count();
          servers[i]!.child.kill('SIGTERM');
          expect(await servers[i]!.exited).toBe(0);
          servers[i] = await serve(ports[i]!, args(i, 500));
          await ready(servers[i]!.url);
          // The load went on through the restart (polled: on a loaded machine 300 ms once passed without an answer).
          await l.progressed(before);
        }
      }
      await sleep(500);
    } finally {
      await l.stop();
    }
    expect(l.failures).toEqual([]);
    expect(repeats(l.ids)).toEqual([]);
    expect(l.ids.length).toBeGreaterThan(1000);
  }, 300_000);

  it('--workers 2 behind one URL: each worker replaced in turn, twice, under SDK load: no failed call, no repeat', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-rolling-workers-'));
    const store = `sqlite:${join(dir, 'ids.db')}`;
    const port = await freePort();
    const s = await serve(port, ['--workers', '2', '--store', store, '--state-dir', join(dir, 'state'), '--max-step', '64']);
    await createTag(s.url, 'workers', 16);
    const l = load([s.url], 'workers', 4);
    try {
      await sleep(1000);
      let pids = lines(s, 'listening')[0]!.workerPids as number[];
      expect(pids).toHaveLength(2);
      let replaced = 0;
      for (let round = 0; round < 2; round++) {
        for (const pid of pids) {
          const before = l.count();
          process.kill(pid, 'SIGTERM');
          replaced++;
          await expect.poll(() => lines(s, 'worker replaced').length, { timeout: 30_000, interval: 50 }).toBe(replaced);
          await l.progressed(before);
        }
        pids = lines(s, 'worker replaced')
          .slice(-2)
          .map((x) => x.workerPid as number);
      }
      await sleep(500);
    } finally {
      await l.stop();
    }
    expect(l.failures).toEqual([]);
    expect(repeats(l.ids)).toEqual([]);
    // Each worker stopped cleanly (a drain, not a crash).
    const exits = lines(s, 'worker exited; replacing it');
    expect(exits).toHaveLength(4);
    expect(exits.every((e) => e.code === 0)).toBe(true);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }, 300_000);
});
