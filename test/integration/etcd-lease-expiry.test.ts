/**
 * The etcd worker-id provider with real processes and a real etcd
 * (.ci/etcd.sh): server A is paused (SIGSTOP) past its lease, its etcd lease
 * runs out, server B starts and takes A's worker id (the lowest expired id)
 * after A's last reported tick, and A is resumed beside B. A must not issue
 * on the id B now holds, and no ID repeats across A and B; the lease ledger
 * (read as `sequoia audit` reads it) shows both holdings.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, expect, it } from 'vitest';
import { EtcdWorkerLeaseStore } from '../../src/adapters/etcd/etcd-worker-lease-store.js';
import { parseEtcdSpec } from '../../src/adapters/etcd/etcd-spec.js';
import { decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, sequoia } from '../helpers/cli.js';
import { ETCD, clearEtcdPrefix, etcdPrefix, probeEtcd } from '../helpers/etcd.js';
import { describeWithService } from '../helpers/services.js';
import { serveWithProvider } from '../helpers/zookeeper.js';

const twitter = getLayout('twitter');
const dirs: string[] = [];
const servers: ServerProcess[] = [];
const prefix = etcdPrefix();
const SPEC = `etcd://${ETCD}${prefix}`;
const TTL_MS = 2000;

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-etcd-expiry-'));
  dirs.push(d);
  return d;
}

async function serve(stateDir: string): Promise<ServerProcess> {
  const s = await serveWithProvider(SPEC, stateDir, ['--log-level', 'info', '--worker-lease-ttl-ms', String(TTL_MS)]);
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

async function load(s: ServerProcess, count: number, untilMs: number): Promise<Answer[]> {
  const out: Answer[] = [];
  while (Date.now() < untilMs) out.push(await take(s, count));
  return out;
}

const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);
const tick = (id: string) => decompose(twitter, BigInt(id)).tick;

afterAll(async () => {
  for (const s of servers) {
    s.child.kill('SIGCONT');
    s.child.kill('SIGKILL');
  }
  await Promise.all(servers.map((s) => s.exited));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await clearEtcdPrefix(prefix).catch(() => {});
});

it('a spec outside the form is refused at start with exit status 2, naming the form and never the password', () => {
  const r = sequoia(['serve', '--port', '0', '--worker-id-provider', 'etcd://app:s3cret@etcd-0']);
  expect(r.status).toBe(2);
  expect(r.stderr).toMatch(/worker id provider etcd: each member must be HOST:PORT; expected etcd:\/\/\[USER:PASSWORD@\]HOST:PORT/);
  expect(r.stderr + r.stdout).not.toMatch(/s3cret|\n\s+at /);
});

it('with etcd unreachable the server starts: snowflake answers 503 STORE_UNAVAILABLE, segment IDs are served', async () => {
  const dir = tmp();
  // Port 1 on loopback: nothing listens, so every etcd call is refused at once.
  const s = await serveWithProvider('etcd://127.0.0.1:1/sequoia-test', dir);
  servers.push(s);
  const r = await take(s, 1);
  expect({ status: r.status, code: r.code }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE' });
  expect(s.output()).not.toMatch(/\n\s+at /);
  const created = sequoia(['tag', 'create', 'etcd-down', '--store', `sqlite:${join(dir, 'x.db')}`]);
  expect(created.status, created.stderr).toBe(0);
  const seg = await fetch(`${s.url}/v1/segment/etcd-down?count=3`);
  expect(seg.status).toBe(200);
}, 60_000);

const describeEtcd = await describeWithService('etcd', probeEtcd);

describeEtcd('etcd provider: a holder paused past its lease (real etcd, real processes)', () => {
  it('paused past its lease while another server takes its id: the new holder starts after it, it issues nothing more, no ID repeats', async () => {
    const a = await serve(tmp());
    const before: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await take(a, 1000);
      expect(r.status).toBe(200);
      before.push(...r.ids);
    }
    const wa = worker(before[0] as string);

    a.child.kill('SIGSTOP');
    // Waits for etcd itself to drop A's lease key (its lease ran out), not for a fixed time.
    const c = new Etcd3({ hosts: `http://${ETCD}` });
    try {
      await expect
        .poll(
          async () =>
            (
              await c
                .getAll()
                .prefix(`${prefix}/${encodeURIComponent(twitter.spaceKey)}/lease/`)
                .keys()
            ).length,
          {
            timeout: 20_000,
            interval: 200,
          },
        )
        .toBe(0);
    } finally {
      c.close();
    }
    const b = await serve(tmp());
    // B answers once its lease is taken (snowflake requests meanwhile are 503, the server up).
    let firstB = await take(b, 1000);
    const deadline = Date.now() + 20_000;
    while (firstB.status !== 200 && Date.now() < deadline) {
      expect(firstB.status).toBe(503);
      firstB = await take(b, 1000);
    }
    expect({ status: firstB.status, code: firstB.code }).toEqual({ status: 200, code: undefined });
    expect(worker(firstB.ids[0] as string)).toBe(wa);
    expect(Math.min(...firstB.ids.map(tick))).toBeGreaterThan(Math.max(...before.map(tick)));

    a.child.kill('SIGCONT');
    const until = Date.now() + 4000;
    const [fromA, fromB] = await Promise.all([load(a, 1000, until), load(b, 1000, until)]);
    const issuedByA = fromA.flatMap((r) => r.ids);
    const all = [...before, ...firstB.ids, ...fromB.flatMap((r) => r.ids), ...issuedByA];
    expect(all.length - new Set(all).size).toBe(0);
    // A may lease another id once it learns it lost this one, but never issues on the id B holds.
    expect(issuedByA.filter((id) => worker(id) === wa)).toEqual([]);
    expect(fromB.every((r) => r.status === 200)).toBe(true);
    expect(a.output()).toMatch(/passed to another holder|LEASE_LOST/);

    // The ledger `explain` and `audit` read: A's holding, then B's takeover after A's horizon.
    const ledger = new EtcdWorkerLeaseStore(parseEtcdSpec(SPEC));
    try {
      const hs = await ledger.holdings(twitter.spaceKey, wa);
      expect(hs.map((h) => h.began)).toEqual(['grant', 'takeover']);
      const [ha, hb] = hs as [(typeof hs)[0], (typeof hs)[0]];
      expect(hb.fromTick).toBeGreaterThan(ha.untilTick);
      expect(ha.untilTick).toBeGreaterThanOrEqual(Math.max(...before.map(tick)));
    } finally {
      await ledger.close();
    }
  }, 90_000);
});
