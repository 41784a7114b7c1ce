/**
 * Issue 28 item 8 (DESIGN.md invariant 5): a state dir belongs to one server.
 * A second server, on another store or the same one, is refused at start with
 * the real cause; the workers of one `--workers N` server and the CLI's
 * `fence` and `gen segment` (same store) still share it. Before the fix a
 * server on another store recorded rollback marks under the first server's
 * tags, and the correctly configured server then refused its requests.
 */
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { spawnSync } from 'node:child_process';
import { freePort } from '../helpers/ports.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `serve` expected to refuse: its exit status and output. */
function serveRefused(args: string[]): { status: number | null; output: string } {
  // A server that starts anyway (the bug) is killed after 60 s: status null, the test fails. (At a load
  // average of 25 a refusal, a node start-up and one lock, took up to 20 s.)
  const r = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  return { status: r.status, output: r.stdout + r.stderr };
}

describe('one state dir, one server (issue 28 item 8)', () => {
  it('a server on another store sharing the state dir is refused at start, naming the store the dir belongs to; the first server keeps serving', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-owner-'));
    const storeA = `sqlite:${join(dir, 'a.db')}`;
    const storeB = `sqlite:${join(dir, 'b.db')}`;
    const stateDir = join(dir, 'state');
    expect(sequoia(['tag', 'create', 't', '--store', storeA, '--state-dir', stateDir]).status).toBe(0);
    expect(sequoia(['tag', 'create', 't', '--store', storeB, '--state-dir', stateDir]).status).toBe(0);

    const a = await startServe(['--store', storeA, '--state-dir', stateDir]);
    running.push(a);
    expect((await get(`${a.url}/api/segment/get/t`)).body).toBe('1');
    // Store B's counter is behind A's mark: before the fix, B's server tripped the guard for A's tag.
    expect(sequoia(['fence', 't', '--to', '5000', '--store', storeA, '--state-dir', stateDir]).status).toBe(0);

    const b = serveRefused(['--store', storeB, '--state-dir', stateDir]);
    expect(b.status).toBe(2); // a configuration error
    expect(b.output).toContain('belongs to store');
    expect(b.output).toContain(join(dir, 'a.db'));
    expect(b.output).not.toContain('ROLLBACK');

    // The CLI on another store is refused the same way; on the same store it works while the server runs.
    const fenceB = sequoia(['fence', 't', '--to', '10', '--store', storeB, '--state-dir', stateDir]);
    expect(fenceB.status).toBe(2);
    expect(fenceB.stderr).toContain('belongs to store');
    const gen = sequoia(['gen', 'segment', '--tag', 't', '--store', storeA, '--state-dir', stateDir]);
    expect(gen.status, gen.stderr).toBe(0);

    // The first server never saw a rollback.
    for (let i = 0; i < 5; i++) expect((await get(`${a.url}/api/segment/get/t`)).status).toBe(200);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    // After it stops, the dir still belongs to store A.
    const b2 = serveRefused(['--store', storeB, '--state-dir', stateDir]);
    expect(b2.status).toBe(2);
    expect(b2.output).toContain('belongs to store');
  }, 300_000);

  it('a second server on the same store and state dir is refused while the first runs; --workers 2 shares it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-owner-'));
    const store = `sqlite:${join(dir, 'a.db')}`;
    const stateDir = join(dir, 'state');
    expect(sequoia(['tag', 'create', 't', '--store', store, '--state-dir', stateDir]).status).toBe(0);
    const a = await startServe(['--store', store, '--state-dir', stateDir, '--workers', '2']);
    running.push(a);
    for (let i = 0; i < 4; i++) expect((await get(`${a.url}/api/segment/get/t`)).status).toBe(200);
    const second = serveRefused(['--store', store, '--state-dir', stateDir]);
    expect(second.status).toBe(1);
    expect(second.output).toMatch(/state dir .* is in use by another server/);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    // Once the first has stopped, a server may take the dir over.
    const b = await startServe(['--store', store, '--state-dir', stateDir]);
    running.push(b);
    expect((await get(`${b.url}/api/segment/get/t`)).status).toBe(200);
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  }, 300_000);

  for (const workers of ['1', '2']) {
    it(`--workers ${workers}: a start that fails (a typo in --store, a store nobody answers at) leaves the state dir unbound`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-owner-'));
      const stateDir = join(dir, 'state');
      const w = ['--workers', workers];
      const typo = serveRefused(['--store', 'sqlit:/tmp/x.db', '--state-dir', stateDir, ...w]);
      expect(typo.status).toBe(2);
      expect(typo.output).toContain('store');
      const down = serveRefused(['--store', `postgres://postgres@127.0.0.1:${await freePort()}/test`, '--state-dir', stateDir, ...w]);
      expect(down.status).not.toBe(0);
      expect(down.output).not.toContain('belongs to store');
      // The store meant: the dir is still free to bind (before the fix: "belongs to store sqlit:/tmp/x.db").
      const store = `sqlite:${join(dir, 'a.db')}`;
      expect(sequoia(['tag', 'create', 't', '--store', store, '--state-dir', stateDir]).status).toBe(0);
      const a = await startServe(['--store', store, '--state-dir', stateDir, ...w]);
      running.push(a);
      expect((await get(`${a.url}/api/segment/get/t`)).status).toBe(200);
      a.child.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      // Once bound, it stays bound: the typo is refused now, naming the store.
      const after = serveRefused(['--store', `sqlite:${join(dir, 'b.db')}`, '--state-dir', stateDir, ...w]);
      expect(after.output).toContain(`belongs to store ${store}`);
    }, 300_000);
  }
});
