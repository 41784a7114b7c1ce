/**
 * The lease ledger of `zookeeper:…?leaf=NAME` (issue 21), on a real ZooKeeper
 * (.ci/zookeeper.sh): kept in Sequoia's `/sequoia/leaf/NAME`, never in Leaf's
 * `/snowflake/NAME`. The provider records a grant, moves the horizon with each
 * report, marks a clean stop released, records a restart after a crash as a
 * takeover and prunes old holdings by `ledgerRetentionDays`. With real
 * `sequoia serve` processes, the holding of a SIGKILLed server covers every ID
 * it issued: `explain` and `audit --store zookeeper://…?leaf=NAME` find each
 * one held, and an ID of a worker id or a tick nobody held is found. Each test
 * has a leaf name of its own.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type zookeeper from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { compose, decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import { ZookeeperLeaseLedger } from '../../src/adapters/zookeeper/zookeeper-lease-ledger.js';
import { LeafZookeeperWorkerIdProvider } from '../../src/adapters/zookeeper/zookeeper-leaf-provider.js';
import { createWorkerIdProvider } from '../../src/app/worker-id-providers.js';
import type { IdSpace, WorkerIdProvider } from '../../src/ports/worker-id-provider.js';
import { type ServerProcess, sequoia } from '../helpers/cli.js';
import { type Lease, ok } from '../helpers/lease-explain.js';
import { call, connectZk, getJson, serveWithProvider, ZK } from '../helpers/zookeeper.js';
import { describeWithService } from '../helpers/services.js';

const leaf = getLayout('leaf');
const space: IdSpace = { key: leaf.spaceKey, workerCount: 1024, unitMs: leaf.unitMs, epochMs: leaf.epochMs, label: 'leaf' };
const dir = mkdtempSync(join(tmpdir(), 'sequoia-zkleaf-ledger-'));
const servers: ServerProcess[] = [];
const providers: WorkerIdProvider[] = [];
let zk: zookeeper.Client | undefined;

afterAll(async () => {
  for (const s of servers) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  await Promise.all(providers.map((p) => p.close()));
  zk?.close();
  rmSync(dir, { recursive: true, force: true });
});

const describeZk = await describeWithService('ZooKeeper', async () => {
  zk = await connectZk();
});

const children = (path: string) => call<string[]>((cb) => zk?.getChildren(path, cb));
const nowTick = () => Math.floor((Date.now() - leaf.epochMs) / leaf.unitMs);

/** Leaf's tree holds only its `forever` nodes, each with Leaf's JSON and nothing else. */
async function expectLeafTreeUntouched(leafName: string): Promise<void> {
  expect(await children(`/snowflake/${leafName}`)).toEqual(['forever']);
  for (const name of await children(`/snowflake/${leafName}/forever`)) {
    expect(name).toMatch(/^127\.0\.0\.1:\d+-\d{10}$/);
    expect(Object.keys((await getJson(zk, `/snowflake/${leafName}/forever/${name}`)).data)).toEqual(['ip', 'port', 'timestamp']);
  }
}

describeZk('lease ledger: zookeeper leaf=NAME (real ZooKeeper)', () => {
  it('records grant, horizon, release, a takeover after a crash, and prunes by retention, beside Leaf’s tree', async () => {
    const leafName = `sequoia_test_${randomUUID().slice(0, 8)}`;
    const ledgerRoot = `/sequoia/leaf/${leafName}`;
    const ledger = new ZookeeperLeaseLedger(ZK, ledgerRoot);
    const node = `127.0.0.1:${20000 + randomInt(40000)}`;
    const provider = (): LeafZookeeperWorkerIdProvider => {
      const p = new LeafZookeeperWorkerIdProvider({ connect: ZK, leafName, identity: node, version: '9.9.9' });
      providers.push(p);
      return p;
    };
    try {
      const a = provider();
      const before = nowTick();
      const g = await a.acquire(space);
      let [h] = await ledger.holdings(space.key);
      expect(h).toMatchObject({
        workerId: g.workerId,
        began: 'grant',
        owner: node,
        released: false,
        holder: { host: node, version: '9.9.9' },
      });
      // From the holder's clock at the grant (a new node has no earlier tick), nothing reserved yet.
      expect(h!.fromTick).toBeGreaterThanOrEqual(before);
      expect(h!.fromTick).toBeLessThanOrEqual(nowTick());
      expect(h!.untilTick).toBe(h!.fromTick - 1);

      // Each report moves the horizon to the ticks reserved, never back.
      await a.renew(space, g, h!.fromTick + 5000);
      [h] = await ledger.holdings(space.key);
      expect(h!.untilTick).toBe(h!.fromTick + 5000);
      await a.renew(space, g, h!.fromTick + 9000);
      await a.renew(space, g, h!.fromTick + 7000);
      [h] = await ledger.holdings(space.key);
      expect(h!.untilTick).toBe(h!.fromTick + 9000);

      // A clean stop: released, the horizon kept; a restart after it is a new holding, a grant.
      await a.release(space, g, h!.fromTick + 100);
      [h] = await ledger.holdings(space.key);
      expect(h).toMatchObject({ released: true, untilTick: h!.fromTick + 9000 });
      await a.close();
      const b = provider();
      const gb = await b.acquire(space);
      expect(gb.workerId).toBe(g.workerId);
      let all = await ledger.holdings(space.key);
      expect(all.map((x) => [x.began, x.released])).toEqual([
        ['grant', true],
        ['grant', false],
      ]);
      expect(all[1]!.generation).toBeGreaterThan(all[0]!.generation);
      expect(all[1]!.holder.instance).not.toBe(all[0]!.holder.instance);
      // Starts after the tick the stop wrote into Leaf's node.
      expect(all[1]!.fromTick).toBeGreaterThan(all[0]!.fromTick + 100);

      // A crash (closed without release): the next start of the same {ip}:{port} takes the holding over.
      await b.renew(space, gb, nowTick() + 50);
      await b.close();
      const c = provider();
      await c.acquire(space);
      all = await ledger.holdings(space.key);
      expect(all.map((x) => [x.began, x.released])).toEqual([
        ['grant', true],
        ['grant', false],
        ['takeover', false],
      ]);
      expect(all[2]!.fromTick).toBeGreaterThan(all[1]!.untilTick);
      await c.close();
      await expectLeafTreeUntouched(leafName);

      // Retention as wired for serve (ledgerRetentionDays): a new holding prunes those not written for longer.
      await new Promise((r) => setTimeout(r, 50));
      const pruning = createWorkerIdProvider(`zookeeper:${ZK}?leaf=${leafName}&node=${node}`, () => undefined, {
        ledgerRetentionDays: 1 / 86_400_000, // 1 ms
      });
      providers.push(pruning);
      await pruning.acquire(space);
      for (let i = 0; i < 50 && (await ledger.holdings(space.key)).length > 1; i++) await new Promise((r) => setTimeout(r, 100));
      const last = all[2]!.generation;
      all = await ledger.holdings(space.key);
      expect(all.map((x) => [x.began, x.released])).toEqual([['takeover', false]]);
      expect(all[0]!.generation).toBeGreaterThan(last);
    } finally {
      await ledger.close();
    }
  }, 60_000);

  it('a SIGKILLed server’s holding covers every ID it issued: explain and audit find them held', async () => {
    const leafName = `sequoia_test_${randomUUID().slice(0, 8)}`;
    const node = `127.0.0.1:${20000 + randomInt(40000)}`;
    const provider = `zookeeper:${ZK}?leaf=${leafName}&node=${node}&report-interval=300`;
    const store = `zookeeper://${ZK}?leaf=${leafName}`;
    const serve = async (name: string): Promise<ServerProcess> => {
      const s = await serveWithProvider(provider, join(dir, `${leafName}-${name}`), ['--snowflake-layout', 'leaf']);
      servers.push(s);
      return s;
    };
    const issue = async (s: ServerProcess): Promise<string[]> => {
      for (let i = 0; ; i++) {
        const r = await fetch(`${s.url}/v1/snowflake?count=50&layout=leaf`);
        const body = (await r.json()) as { ids?: string[] };
        if (r.status === 200) return body.ids ?? [];
        // The worker id is taken in the background; a restart waits out the tick the killed server reserved.
        if (i > 60) throw new Error(`${r.status} ${JSON.stringify(body)}\n${s.output()}`);
        await new Promise((res) => setTimeout(res, 250));
      }
    };
    const workerOf = (id: string): number => joinWorker(leaf, decompose(leaf, BigInt(id)).values);
    const tickOf = (id: string): number => decompose(leaf, BigInt(id)).tick;
    const explain = (id: string): Lease =>
      (JSON.parse(ok(sequoia(['explain', id, '--layout', 'leaf', '--store', store]))) as { lease: Lease }).lease;

    // A issues for a while (many reports at 300 ms), then is killed at once after its last answer.
    const a = await serve('a');
    const byA: string[] = [];
    const until = Date.now() + 2500;
    while (Date.now() < until) byA.push(...(await issue(a)));
    a.child.kill('SIGKILL');
    await a.exited;
    const w = workerOf(byA[0] as string);
    expect(byA.map(workerOf)).toEqual(byA.map(() => w));

    const ledger = new ZookeeperLeaseLedger(ZK, `/sequoia/leaf/${leafName}`);
    try {
      const [ha] = await ledger.holdings(leaf.spaceKey);
      expect(ha).toMatchObject({ workerId: w, began: 'grant', released: false, holder: { pid: a.child.pid } });
      // Folded, not spread: 2.5 s of IDs is more arguments than a call's stack takes.
      const ticks = byA.map(tickOf);
      expect(ha!.untilTick).toBeGreaterThanOrEqual(ticks.reduce((m, t) => (t > m ? t : m)));
      expect(ha!.fromTick).toBeLessThanOrEqual(ticks.reduce((m, t) => (t < m ? t : m)));
    } finally {
      await ledger.close();
    }
    for (const id of [byA[0], byA[byA.length - 1]] as string[]) {
      const lease = explain(id);
      expect(lease.workerId).toBe(w);
      expect(lease.heldBy).toHaveLength(1);
      expect(lease.heldBy[0]).toMatchObject({
        pid: a.child.pid,
        began: 'grant',
        released: false,
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      });
    }

    // B: the same {ip}:{port} after the crash keeps the id and takes the holding over; it stops cleanly.
    const b = await serve('b');
    const byB = await issue(b);
    expect(byB.map(workerOf)).toEqual(byB.map(() => w));
    b.child.kill('SIGTERM');
    await b.exited;
    const ofB = explain(byB[0] as string);
    expect(ofB.heldBy).toHaveLength(1);
    expect(ofB.heldBy[0]).toMatchObject({ pid: b.child.pid, began: 'takeover', released: true });
    await expectLeafTreeUntouched(leafName);

    // Audit: every ID of both is held; one of a worker id nobody held, and one of A's before its grant, are found.
    const file = join(dir, `${leafName}.txt`);
    const all = [...byA, ...byB];
    writeFileSync(file, all.join('\n') + '\n');
    const common = ['--layout', 'leaf', '--store', store, '--json'];
    const clean = sequoia(['audit', file, ...common]);
    expect(clean.status, clean.stdout + clean.stderr).toBe(0);
    const otherWorker = compose(leaf, tickOf(byA[0] as string), { worker: (w + 1) % 1024, sequence: 0 }).toString();
    const beforeGrant = compose(leaf, tickOf(byA[0] as string) - 60_000, { worker: w, sequence: 0 }).toString();
    expect([otherWorker, beforeGrant].map(workerOf)).toEqual([(w + 1) % 1024, w]);
    writeFileSync(file, [...all, otherWorker, beforeGrant].join('\n') + '\n');
    const found = sequoia(['audit', file, ...common]);
    expect(found.status, found.stdout + found.stderr).toBe(1);
    const report = JSON.parse(found.stdout) as { findings: Array<{ kind: string; count: number; examples: string[] }> };
    expect(report.findings.map((f) => [f.kind, f.count])).toEqual([['unheld-worker-id', 2]]);
    expect(report.findings[0]!.examples.map((e) => e.split(' ')[0]).sort()).toEqual([otherWorker, beforeGrant].sort());
  }, 120_000);
});
