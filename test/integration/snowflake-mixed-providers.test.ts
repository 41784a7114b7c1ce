/**
 * `lease` and `worker-node` servers on one store (real processes, the built
 * binary, a fresh SQLite file): worker-node ids come from the lease pool, so
 * no two servers issue on one worker id and no snowflake ID repeats. On a
 * fresh file the first worker-node row is id 1, the id the second lease
 * server holds, so the collision this guards against is certain, not lucky.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, startServe } from '../helpers/cli.js';

const twitter = getLayout('twitter');
const dir = mkdtempSync(join(tmpdir(), 'sequoia-sf-mixed-'));
const store = `sqlite:${join(dir, 'mixed.db')}`;
const servers: ServerProcess[] = [];

afterAll(async () => {
  for (const s of servers) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  rmSync(dir, { recursive: true, force: true });
});

async function serve(name: string, provider: string): Promise<ServerProcess> {
  const s = await startServe([
    '--store',
    store,
    '--state-dir',
    join(dir, name),
    '--worker-id-provider',
    provider,
    '--workers',
    '1',
    '--log-level',
    'info',
  ]);
  servers.push(s);
  return s;
}

async function snowflakes(s: ServerProcess): Promise<string[]> {
  const r = await fetch(`${s.url}/v1/snowflake?count=2000`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { ids: string[] }).ids;
}

const workerOf = (id: string): number => joinWorker(twitter, decompose(twitter, BigInt(id)).values);

describe('lease and worker-node servers on one store', () => {
  it('never issue on the same worker id, in either order of start', async () => {
    // Lease servers hold 0 and 1; the first worker-node row (id 1) is held, so worker-node takes the next free row id.
    const started = [await serve('lease-a', 'lease'), await serve('lease-b', 'lease'), await serve('node-c', 'worker-node')];
    // A lease server started after the worker-node one must not choose its id either.
    started.push(await serve('lease-d', 'lease'), await serve('node-e', 'worker-node'));
    const all = await Promise.all(started.map(snowflakes));
    const workers = all.map((ids) => {
      const ws = new Set(ids.map(workerOf));
      expect(ws.size).toBe(1);
      return [...ws][0];
    });
    // worker-node skips row ids 1 and 3 (held by live leases); lease-d skips worker-node's 2.
    expect(workers).toEqual([0, 1, 2, 3, 4]);
    const flat = all.flat();
    expect(new Set(flat).size).toBe(flat.length);
  }, 60_000);
});
