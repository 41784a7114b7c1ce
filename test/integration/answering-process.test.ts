/**
 * With SEQUOIA_ANSWER_PID=1 every answer of the HTTP handler names the process
 * that produced it (`sequoia-pid`): with `--workers N` the port is shared and
 * a client cannot otherwise tell which worker answered; the torture harness
 * holds each process to its promises (IDs of a tag increase) by this header.
 * Without it (the default) no answer carries a process id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function pidOf(url: string): Promise<{ status: number; pid: string | null }> {
  const res = await fetch(url, { headers: { connection: 'close' } });
  await res.arrayBuffer();
  return { status: res.status, pid: res.headers.get('sequoia-pid') };
}

describe('sequoia-pid header', () => {
  it('names the server process on the fast path, on fastify routes and on errors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-pid-'));
    dirs.push(dir);
    const db = `sqlite:${join(dir, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--store', db]).status).toBe(0);
    const s = await startServe(['--workers', '1', '--store', db, '--state-dir', join(dir, 'state')], { SEQUOIA_ANSWER_PID: '1' });
    running.push(s);
    const pid = String(s.child.pid);
    for (const path of [
      '/api/segment/get/order',
      '/v1/segment/order?count=2',
      '/v1/snowflake',
      '/v1/tags',
      '/v1/segment/nope',
      '/no/such/route',
    ]) {
      expect((await pidOf(s.url + path)).pid, path).toBe(pid);
    }
  });

  it('names the worker, not the primary, under --workers 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-pid-'));
    dirs.push(dir);
    const db = `sqlite:${join(dir, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--store', db]).status).toBe(0);
    const s = await startServe(['--workers', '2', '--store', db, '--state-dir', join(dir, 'state')], { SEQUOIA_ANSWER_PID: '1' });
    running.push(s);
    const line = s
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"listening"')) as string;
    const workers = (JSON.parse(line) as { workerPids: number[] }).workerPids.map(String);
    const seen = new Set<string>();
    // Fresh connections: cluster's round-robin spreads them over both workers.
    for (let i = 0; i < 20 && seen.size < 2; i++) seen.add(String((await pidOf(`${s.url}/v1/segment/order`)).pid));
    expect([...seen].sort()).toEqual([...workers].sort());
  });

  it('is off by default: no answer carries a process id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-pid-'));
    dirs.push(dir);
    const db = `sqlite:${join(dir, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--store', db]).status).toBe(0);
    const s = await startServe(['--workers', '1', '--store', db, '--state-dir', join(dir, 'state')]);
    running.push(s);
    for (const path of ['/api/segment/get/order', '/v1/segment/order?count=2', '/v1/tags', '/no/such/route']) {
      const r = await pidOf(s.url + path);
      expect(r.status, path).toBeLessThan(500);
      expect(r.pid, path).toBe(null);
    }
  });
});
