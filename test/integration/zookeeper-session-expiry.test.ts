/**
 * The zookeeper worker-id provider when its session expires under it, with
 * real processes: server A (`?node=shared`) is paused (SIGSTOP) past the
 * session timeout, B starts with the same node name and takes A's node, A is
 * resumed and both are asked for snowflake IDs. A must not issue on the id B
 * now holds (it refuses with 503), and no ID repeats across A and B. Before
 * the fix A went on issuing on worker 0 beside B.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import type { ServerProcess } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { connectZk, serveWithProvider, ZK } from '../helpers/zookeeper.js';

const twitter = getLayout('twitter');
const dirs: string[] = [];
const servers: ServerProcess[] = [];

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-zk-expiry-'));
  dirs.push(d);
  return d;
}

async function serve(provider: string, stateDir: string): Promise<ServerProcess> {
  const s = await serveWithProvider(provider, stateDir, ['--log-level', 'info']);
  servers.push(s);
  return s;
}

interface Answer {
  readonly status: number;
  readonly ids: string[];
  readonly code: string | undefined;
}

async function take(s: ServerProcess, count: number): Promise<Answer> {
  const r = await fetch(`${s.url}/v1/snowflake?count=${count}`, { signal: AbortSignal.timeout(20_000) });
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  return { status: r.status, ids: body.ids ?? [], code: body.error?.code };
}

/** Requests from `s` one after another until `untilMs` (Date.now()). */
async function load(s: ServerProcess, count: number, untilMs: number): Promise<Answer[]> {
  const out: Answer[] = [];
  while (Date.now() < untilMs) out.push(await take(s, count));
  return out;
}

const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);
const tick = (id: string) => decompose(twitter, BigInt(id)).tick;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterAll(async () => {
  for (const s of servers) {
    s.child.kill('SIGCONT');
    s.child.kill('SIGKILL');
  }
  await Promise.all(servers.map((s) => s.exited));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const describeZk = await describeWithService('ZooKeeper', async () => {
  (await connectZk()).close();
});

describeZk('zookeeper provider: a holder whose session expired (real ZooKeeper, real processes)', () => {
  it('paused past the session timeout, then resumed beside a new holder of its node name: refuses, no ID repeats', async () => {
    const spec = `zookeeper:${ZK}/sequoia-test/${randomUUID().slice(0, 8)}?node=shared`;
    const a = await serve(spec, tmp());
    const before: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await take(a, 1000);
      expect(r.status).toBe(200);
      before.push(...r.ids);
    }
    const wa = worker(before[0] as string);

    a.child.kill('SIGSTOP');
    // The session timeout is 6 s; ZooKeeper expires sessions on its 2 s tick.
    await sleep(10_000);
    const b = await serve(spec, tmp());
    await expect.poll(() => b.output(), { timeout: 15_000 }).toMatch(/"how":"restart: own node"/);
    const firstB = await take(b, 1000);
    expect(firstB.status).toBe(200);
    expect(worker(firstB.ids[0] as string)).toBe(wa);
    // B starts strictly after every tick A issued.
    expect(Math.min(...firstB.ids.map(tick))).toBeGreaterThan(Math.max(...before.map(tick)));

    a.child.kill('SIGCONT');
    const until = Date.now() + 4000;
    const [fromA, fromB] = await Promise.all([load(a, 1000, until), load(b, 1000, until)]);

    const issuedByA = fromA.flatMap((r) => r.ids);
    const all = [...before, ...firstB.ids, ...fromB.flatMap((r) => r.ids), ...issuedByA];
    const repeated = all.length - new Set(all).size;
    expect({ repeated, issuedByAAfterResume: issuedByA.length }).toEqual({ repeated: 0, issuedByAAfterResume: 0 });
    for (const r of fromA) {
      expect(r.status).toBe(503);
      // ZooKeeper not reached yet (STORE_UNAVAILABLE), or the session known gone (LEASE_LOST).
      expect(['LEASE_LOST', 'STORE_UNAVAILABLE']).toContain(r.code);
    }
    expect(fromB.every((r) => r.status === 200)).toBe(true);
    // A's session is gone and B holds the name: A refuses for good with LEASE_LOST.
    await expect.poll(async () => (await take(a, 1)).code, { timeout: 20_000 }).toBe('LEASE_LOST');
    expect(a.output()).toMatch(/another live process runs as shared/);
    expect((await take(b, 1000)).status).toBe(200);
  }, 90_000);
});
