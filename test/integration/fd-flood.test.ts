/**
 * Issue 28, item 3, on real processes: `serve --workers 2` under a
 * 256-descriptor limit (`ulimit -n 256`) flooded with 400 idle and 200
 * slow-header connections. Once every one of them is closed, /healthz and ID
 * requests must be answered again at once (before the fix, a worker that ran
 * out of descriptors could not receive the connections the primary handed it,
 * and Node's round-robin never handed it another: every request timed out,
 * with nothing in the log). The flood is refused early (the connection cap
 * stays below the descriptor limit) and the refusal is logged. And a per-address
 * bound closes one address's surplus while other addresses are served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, launchServe, type ServerProcess, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function open(port: number, first?: string, localAddress?: string): Promise<Socket> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    s.on('error', () => undefined);
    s.once('connect', () => {
      if (first) s.write(first);
      resolve(s);
    });
    s.once('close', () => resolve(s));
  });
}

/** Whether the server closed the connection within `ms` (a refused connection), without the client closing it. */
function closedByServer(s: Socket, ms: number): Promise<boolean> {
  if (s.destroyed || s.readableEnded) return Promise.resolve(true);
  // A refused connection is answered (429) before the server's FIN: read it, or the FIN is never seen.
  s.resume();
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    s.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

async function answered(url: string, ms: number): Promise<number> {
  const r = await fetch(url, { signal: AbortSignal.timeout(ms), headers: { connection: 'close' } });
  await r.text();
  return r.status;
}

function newDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-flood-'));
  dirs.push(d);
  return d;
}

describe('a file-descriptor flood', () => {
  it('--workers 2 under ulimit -n 256: 400 idle + 200 slow-header connections, all closed, then every request is answered', async () => {
    const dir = newDir();
    const server = await launchServe(
      'bash',
      [
        '-c',
        `ulimit -n 256 && exec "${process.execPath}" "${BIN}" serve --port 0 --workers 2 --max-connections 96 --store "sqlite:${join(dir, 'ids.db')}" --state-dir "${join(dir, 'state')}"`,
      ],
      { startTimeoutMs: 60_000 },
    ); // two workers start slowly on a loaded machine
    // At the default (lowered to 192 per worker under 256 descriptors) whether a worker reaches its limit depends
    // on how fast the primary, itself on 256 descriptors, hands 600 connections out (a CI run once saw none reach
    // it in 30 s); at 96 each the limit is passed in every run, and the primary still takes the whole flood.
    running.push(server);
    const port = Number(new URL(server.url).port);
    const created = await fetch(`${server.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"tag":"fl","step":1000}',
    });
    expect(created.status).toBe(201);

    const flood: Socket[] = [];
    for (let i = 0; i < 400; i++) flood.push(await open(port));
    for (let i = 0; i < 200; i++) flood.push(await open(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '));
    // A connection is open once the kernel queued it; on a loaded machine the
    // primary takes a while to accept 600 and hand them out: wait until a
    // worker has reached its limit, not a fixed time.
    for (let waited = 0; waited < 30_000 && !server.output().includes('connections refused: limit reached'); waited += 250)
      await sleep(250);
    await sleep(500);
    for (const s of flood) s.destroy();
    await sleep(1000);

    // Fresh connections, so the primary hands them to both workers in turn.
    for (let i = 0; i < 12; i++) {
      expect(await answered(`${server.url}/healthz`, 5000)).toBe(200);
      expect(await answered(`${server.url}/v1/segment/fl`, 5000)).toBe(200);
    }
    expect(server.output()).toContain('connections refused: limit reached');
  }, 150_000);

  it('per address: one address past its bound is closed at once; another address is still served', async () => {
    const dir = newDir();
    const server = await startServe([
      '--store',
      `sqlite:${join(dir, 'ids.db')}`,
      '--state-dir',
      join(dir, 'state'),
      '--max-connections-per-address',
      '20',
    ]);
    running.push(server);
    const port = Number(new URL(server.url).port);
    const mine: Socket[] = [];
    for (let i = 0; i < 30; i++) mine.push(await open(port));
    const closed = await Promise.all(mine.map((s) => closedByServer(s, 1500)));
    expect(closed.filter(Boolean).length).toBe(10);
    expect(closed.slice(0, 20).every((c) => !c)).toBe(true);
    // another address (127.0.0.2 is loopback too) is not affected
    const other = await open(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', '127.0.0.2');
    const text = await new Promise<string>((resolve) => {
      let t = '';
      other.on('data', (d: Buffer) => (t += d.toString()));
      other.on('close', () => resolve(t));
    });
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    for (const s of mine) s.destroy();
    expect(server.output()).toContain('connections refused: limit reached');
  }, 30_000);
});
