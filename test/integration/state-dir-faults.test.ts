/**
 * Issue 28, items 9 and 11, on real processes (`node dist/cli/main.js serve`):
 * (9) a full state directory, and a rolled-back store, are refused with
 *     STORE_UNAVAILABLE / STORE_ROLLBACK_DETECTED whose messages name no path
 *     (JSON and Leaf routes, /readyz too); the path is in the log.
 * (11) /readyz says 503 while the server cannot issue: its state directory
 *     takes no write (a full file system), or every tag it serves is refused
 *     (a rollback); and 200 again once the space is back, or once a fence is
 *     made elsewhere (the CLI), without a single ID request to the server.
 */
import { servicesRequired } from '../helpers/services.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { canMount, mountSmallFs, type SmallFs } from '../helpers/small-fs.js';

const running: ServerProcess[] = [];
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const c of cleanups) c();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function get(url: string, init?: RequestInit): Promise<{ status: number; body: string }> {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  return { status: r.status, body: await r.text() };
}

async function until(what: string, f: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await f().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** No path of this test's directories, no file name of the state, no absolute path at all. */
function expectNoPath(body: string, dirs: string[]): void {
  for (const d of dirs) expect(body).not.toContain(d);
  expect(body).not.toMatch(/state\.db|\/tmp\/|sequoia-(smallfs|state)/);
}

async function createTag(url: string, tag: string, step: number): Promise<void> {
  const r = await get(`${url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tag, step }),
  });
  expect(r.status, r.body).toBe(201);
}

if (!canMount() && servicesRequired)
  throw new Error('state-dir fault tests need to mount a small tmpfs (root), and SEQUOIA_REQUIRE_SERVICES=1');

describe.skipIf(!canMount())('a full state directory (a 1 MiB tmpfs): no path in any answer', () => {
  let fs: SmallFs;
  let storeDir: string;
  let server: ServerProcess;

  it('refuses new tags with the code and a plain sentence, and recovers when space returns', async () => {
    fs = mountSmallFs(1024);
    cleanups.push(() => fs.unmount());
    storeDir = mkdtempSync(join(tmpdir(), 'sequoia-state-store-'));
    cleanups.push(() => rmSync(storeDir, { recursive: true, force: true }));
    server = await startServe(['--store', `sqlite:${join(storeDir, 'ids.db')}`, '--state-dir', fs.dir, '--max-step', '10']);
    running.push(server);
    await createTag(server.url, 'full', 10);
    expect((await get(`${server.url}/v1/segment/full?count=5`)).status).toBe(200);
    expect((await get(`${server.url}/readyz`)).status).toBe(200);

    // Tags whose first range needs a new mark row: the state file must grow. (Marks of tags
    // already served are rewritten in pages the file holds, which a full disk does not stop.)
    const tags = Array.from({ length: 300 }, (_, i) => `t${i}-${'x'.repeat(110)}`);
    for (const t of tags) await createTag(server.url, t, 10);
    fs.fill();
    // Every new range needs its mark recorded first: once a write finds no room, requests are refused.
    const refused: { status: number; body: string }[] = [];
    for (let i = 0; i < tags.length && refused.length < 4; i++) {
      const t = encodeURIComponent(tags[i] as string);
      for (const path of [`/v1/segment/${t}?count=7`, `/api/segment/get/${t}`]) {
        const r = await get(`${server.url}${path}`);
        if (r.status !== 200) refused.push(r);
      }
    }
    expect(refused.length).toBeGreaterThanOrEqual(4);
    for (const r of refused) {
      expect(r.status).toBe(503);
      expect(r.body).toMatch(/STORE_UNAVAILABLE|SEGMENTS_EXHAUSTED/);
      expectNoPath(r.body, [fs.dir, storeDir]);
    }
    expect(refused.some((r) => r.body.startsWith('STORE_UNAVAILABLE: ') || r.body.startsWith('SEGMENTS_EXHAUSTED: '))).toBe(true); // Leaf's text
    expect(refused.some((r) => r.body.startsWith('{"error"'))).toBe(true); // JSON

    // Readiness while full: the state dir gives up its reserve on a full disk and writes
    // it back when room appears, so the probe can find room for a moment (tags already
    // served keep issuing from pages the file holds). Whatever it says, it names no path.
    const ready = await get(`${server.url}/readyz`);
    if (ready.status !== 200) expect(JSON.parse(ready.body)).toMatchObject({ error: { code: 'STORE_UNAVAILABLE' } });
    expectNoPath(ready.body, [fs.dir]);
    // The operator's log has the whole story, path included.
    expect(server.output()).toContain(fs.dir);

    fs.free();
    let last = '';
    await until('/readyz 200 once the space is back', async () => {
      const r = await get(`${server.url}/readyz`);
      last = `${r.status} ${r.body}`;
      return r.status === 200;
    }).catch((e: Error) => {
      throw new Error(`${e.message}: ${last}\n${server.output().slice(-3000)}`);
    });
    await until('IDs again', async () => (await get(`${server.url}/v1/segment/full?count=3`)).status === 200);
  }, 60_000);
});

describe('a rolled-back store: STORE_ROLLBACK_DETECTED names no path; not ready while every tag is refused', () => {
  it('refuses, says not ready, and is ready again after a fence made by the CLI, with no ID request in between', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-rollback-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const storeUrl = `sqlite:${join(dir, 'ids.db')}`;
    const stateDir = join(dir, 'state');
    const server = await startServe(['--store', storeUrl, '--state-dir', stateDir, '--max-step', '10']);
    running.push(server);
    await createTag(server.url, 'rb', 10);
    for (let i = 0; i < 5; i++) expect((await get(`${server.url}/v1/segment/rb?count=9`)).status).toBe(200);
    expect((await get(`${server.url}/readyz`)).status).toBe(200);

    // The store goes back in time (restored from an old backup).
    const db = new Database(join(dir, 'ids.db'));
    db.prepare('UPDATE sequoia_alloc SET max_id = 1 WHERE tag = ?').run('rb');
    db.close();

    const answers: { status: number; body: string }[] = [];
    for (let i = 0; i < 20 && answers.filter((a) => a.status === 503).length < 4; i++) {
      answers.push(await get(`${server.url}/v1/segment/rb?count=9`), await get(`${server.url}/api/segment/get/rb`));
    }
    const refused = answers.filter((a) => a.status === 503);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    for (const r of refused) {
      expect(r.body).toMatch(/STORE_ROLLBACK_DETECTED/);
      expectNoPath(r.body, [dir]);
    }
    expect(refused.some((r) => r.body.startsWith('STORE_ROLLBACK_DETECTED: '))).toBe(true);

    const ready = await get(`${server.url}/readyz`);
    expect(ready.status, ready.body).toBe(503);
    expect(ready.body).toContain('every tag');
    expectNoPath(ready.body, [dir]);

    // A fence made elsewhere; the server gets only /readyz, as a load balancer would send it.
    const fenced = sequoia(['fence', 'rb', '--to', '1000', '--store', storeUrl, '--state-dir', stateDir]);
    expect(fenced.status, fenced.stderr).toBe(0);
    await until('/readyz 200 after the fence', async () => (await get(`${server.url}/readyz`)).status === 200);
    const after = await get(`${server.url}/v1/segment/rb?count=3`);
    expect(after.status, after.body).toBe(200);
    expect(BigInt((JSON.parse(after.body) as { ids: string[] }).ids[0]!)).toBeGreaterThanOrEqual(1000n);
  }, 60_000);
});
