/**
 * Three `sequoia serve` processes on one SQLite file, concurrent clients, one
 * server SIGKILLed mid-run and restarted on the same state directory, another
 * stopped with SIGTERM: every ID any client ever received is unique.
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

async function serve(dbUrl: string, stateDir: string): Promise<ServerProcess> {
  const s = await startServe(['--store', dbUrl, '--state-dir', stateDir, '--max-step', '64', '--log-level', 'info']);
  running.push(s);
  return s;
}

describe('several servers on one SQLite file', () => {
  it('never repeat an ID across concurrent clients, SIGKILL, restart and SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-mp-'));
    const db = `sqlite:${join(dir, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--step', '8', '--store', db], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(0);
    const states = [0, 1, 2].map((i) => join(dir, `state${i}`));
    // servers[i] runs on states[i]: a restart must reuse its own state dir (a state dir belongs to one server).
    const servers = await Promise.all(states.map((s) => serve(db, s)));
    const urls = servers.map((p) => p.url);

    const seen: string[] = [];
    let errors = 0;
    let stop = false;
    const client = async (which: number) => {
      while (!stop) {
        const count = 1 + Math.floor(Math.random() * 40);
        const leaf = Math.random() < 0.3;
        const url = leaf ? `${urls[which]}/api/segment/get/order` : `${urls[which]}/v1/segment/order?count=${count}`;
        try {
          const res = await fetch(url);
          const text = await res.text();
          if (res.status !== 200) {
            errors++;
            continue;
          }
          if (leaf) seen.push(text);
          else seen.push(...(JSON.parse(text) as { ids: string[] }).ids);
        } catch {
          errors++; // the server is down or restarting: the client got no IDs
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const clients = [0, 1, 2].flatMap((w) => Array.from({ length: 4 }, () => client(w)));

    await new Promise((r) => setTimeout(r, 1500));
    servers[0]!.child.kill('SIGKILL');
    expect(await servers[0]!.exited).toBe('SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    const restarted = await serve(db, states[0]!);
    urls[0] = restarted.url;
    await new Promise((r) => setTimeout(r, 1500));
    servers[1]!.child.kill('SIGTERM');
    expect(await servers[1]!.exited).toBe(0); // graceful: in-flight requests finished, store closed
    await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await Promise.all(clients);

    expect(seen.length).toBeGreaterThan(2000);
    const unique = new Set(seen);
    expect(unique.size).toBe(seen.length);
    for (const id of seen) expect(id).toMatch(/^[1-9][0-9]*$/);
    // the restarted server went on above what it had before: the SQLite row, not a local counter, decides
    const r = await fetch(`${restarted.url}/v1/tags/order`);
    const max = BigInt(((await r.json()) as { maxId: string }).maxId);
    for (const id of seen) expect(BigInt(id) < max).toBe(true);
    expect(errors).toBeLessThan(seen.length);
  });
});
