/**
 * `sequoia serve --workers 2` (node:cluster) on one SQLite file: one shared
 * port (also for --port 0), concurrent clients while a worker is SIGKILLed,
 * no repeated ID, the dead worker replaced and the replacements serving, and
 * SIGTERM to the primary draining every worker with exit 0.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Log lines (JSON) of the server so far with this msg. */
function lines(s: ServerProcess, msg: string): Record<string, unknown>[] {
  return s
    .output()
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('serve --workers 2', () => {
  it('shares one port; a SIGKILLed worker is replaced; no repeats; SIGTERM drains all and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-cluster-'));
    const db = `sqlite:${join(dir, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--step', '8', '--store', db], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(0);
    const s = await startServe([
      '--workers',
      '2',
      '--store',
      db,
      '--state-dir',
      join(dir, 'state'),
      '--max-step',
      '64',
      '--log-level',
      'info',
    ]);
    running.push(s);
    expect(lines(s, 'listening')).toHaveLength(1); // once, by the primary
    const listening = lines(s, 'listening')[0]!;
    const pids = listening.workerPids as number[];
    expect(pids).toHaveLength(2);
    expect(new Set(lines(s, 'worker listening').map((l) => l.url))).toEqual(new Set([s.url])); // one shared port

    const seen: string[] = [];
    let errors = 0;
    let stop = false;
    const client = async () => {
      while (!stop) {
        const leaf = Math.random() < 0.3;
        try {
          // A fresh connection per request (`connection: close`), so round-robin spreads them over the workers.
          const res = await fetch(
            leaf ? `${s.url}/api/segment/get/order` : `${s.url}/v1/segment/order?count=${1 + Math.floor(Math.random() * 20)}`,
            {
              headers: { connection: 'close' },
              // A connection the primary was handing to the worker at the moment it was killed is
              // never answered (node:cluster round-robin drops it): clients need a timeout, as ours has.
              signal: AbortSignal.timeout(3000),
            },
          );
          const text = await res.text();
          if (res.status !== 200) errors++;
          else if (leaf) seen.push(text);
          else seen.push(...(JSON.parse(text) as { ids: string[] }).ids);
        } catch {
          errors++; // the connection was on the killed worker
          await sleep(10);
        }
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await sleep(1000);
    process.kill(pids[0]!, 'SIGKILL');
    await expect.poll(() => lines(s, 'worker replaced').length, { timeout: 30_000, interval: 100 }).toBe(1);
    await sleep(500);
    process.kill(pids[1]!, 'SIGKILL');
    await expect.poll(() => lines(s, 'worker replaced').length, { timeout: 30_000, interval: 100 }).toBe(2);
    // Both original workers are dead: whatever answers now is a replacement.
    const before = seen.length;
    await sleep(1000);
    stop = true;
    await Promise.all(clients);
    expect(pids.some(alive)).toBe(false);
    expect(seen.length).toBeGreaterThan(before);
    const res = await fetch(`${s.url}/api/segment/get/order`);
    expect(res.status).toBe(200);
    seen.push(await res.text());

    expect(seen.length).toBeGreaterThan(500);
    expect(new Set(seen).size).toBe(seen.length);
    expect(errors).toBeLessThan(seen.length / 10);
    expect(lines(s, 'worker exited; replacing it')).toHaveLength(2);

    const current = lines(s, 'worker replaced').map((l) => l.workerPid as number);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(current.some(alive)).toBe(false);
    expect(lines(s, 'stopped').length).toBe(3); // two workers, then the primary
  });

  it('a worker that cannot start fails the whole start with its exit code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-cluster-bad-'));
    const r = sequoia(['serve', '--workers', '2', '--port', '0', '--store', 'postgres://nobody@127.0.0.1:1/none', '--state-dir', dir]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/sequoia: /);
  });
});
