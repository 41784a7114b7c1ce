/**
 * Issue 28 item 2: the state dir and the SQLite store on a small filesystem
 * (a 512 KiB tmpfs, mounted here; root only). The server's own write-ahead
 * logs must never fill it: thousands of segment loads (each one a store
 * transaction and a high-water mark) and snowflake tick reservations keep
 * working. A disk filled by something else answers (IDs, or 503 when a write
 * needs new space), recovers when space returns, and a restart on the full
 * disk works.
 *
 * Skipped (loudly) where mounting is not permitted, unless SEQUOIA_REQUIRE_SERVICES=1.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { servicesRequired } from '../helpers/services.js';

const root = mkdtempSync(join(tmpdir(), 'sequoia-small-disk-'));
const mnt = join(root, 'disk');
mkdirSync(mnt);
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512k', 'tmpfs', mnt]).status === 0;
if (!mounted) {
  const msg = 'small-disk tests: cannot mount a 512 KiB tmpfs here (needs root)';
  if (servicesRequired) throw new Error(`${msg}, and SEQUOIA_REQUIRE_SERVICES=1`);
  console.warn(`SKIPPED ${msg}`);
}

const running: ServerProcess[] = [];
beforeAll(() => {});
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  if (mounted) spawnSync('umount', ['-l', mnt]);
  rmSync(root, { recursive: true, force: true });
});

function get(url: string, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', () => resolve({ status: 0, body: 'network error' }));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes a file until the filesystem is full; answers its path. */
function fill(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as { code?: string }).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
  return path;
}

function usage(dir: string): string {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .map((f) => `${f}=${statSync(join(dir, f)).size}`)
    .join(' ');
}

describe.skipIf(!mounted)('a small filesystem under the state dir and the SQLite store (issue 28 item 2)', () => {
  const store = `sqlite:${join(mnt, 'ids.db')}`;
  const stateDir = join(mnt, 'state');
  const args = ['--store', store, '--state-dir', stateDir, '--max-step', '10'];

  it('thousands of loads do not fill it; a full disk refuses, a restart on it works, and freed space serves again', async () => {
    expect(sequoia(['tag', 'create', 't', '--step', '10', '--store', store, '--state-dir', stateDir]).status).toBe(0);
    const server = await startServe(args);
    running.push(server);
    // 400 requests of one segment each: 400 store transactions and 400 marks, plus tick reservations.
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const r = await get(`${server.url}/v1/segment/t?count=10`);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status !== 200) {
        expect.fail(`request ${i} answered ${r.status} ${r.body}; files: ${usage(mnt)}`);
      }
    }
    expect((await get(`${server.url}/v1/snowflake`)).status).toBe(200);

    // Someone else fills the disk: loads refuse (never hang), health answers.
    const filler = fill(mnt);
    let refused = 0;
    for (let i = 0; i < 20; i++) {
      const r = await get(`${server.url}/v1/segment/t?count=10`);
      expect([200, 503]).toContain(r.status);
      if (r.status === 503) refused++;
    }
    // Refusals only when a write needs new space: the bounded logs usually fit in what their files hold.
    expect(refused).toBeLessThanOrEqual(20);
    expect((await get(`${server.url}/healthz`)).status).toBe(200);

    // A restart on the full disk works.
    server.child.kill('SIGTERM');
    await server.exited;
    const again = await startServe(args);
    running.push(again);
    const r = await get(`${again.url}/v1/segment/t?count=10`);
    expect([200, 503]).toContain(r.status);

    // Space returns: the server serves again, without a restart.
    rmSync(filler);
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      ok = (await get(`${again.url}/v1/segment/t?count=10`)).status === 200;
      if (!ok) await sleep(200);
    }
    expect(ok).toBe(true);
    for (let i = 0; i < 50; i++) expect((await get(`${again.url}/v1/segment/t?count=10`)).status).toBe(200);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 120_000);
});
