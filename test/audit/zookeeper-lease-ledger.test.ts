/**
 * The zookeeper provider's lease ledger end to end, on a real ZooKeeper
 * (.ci/zookeeper.sh) with real `sequoia serve` processes: a server issues
 * snowflake IDs and is SIGKILLed; another takes its worker id over (reclaim)
 * and stops cleanly. `explain --store zookeeper://…` names the right process
 * for the IDs of each, `audit --store zookeeper://…` finds clean IDs clean and
 * an ID planted with a worker id nobody held, and old holdings are pruned.
 * Each run has a root and a layout of its own.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type zookeeper from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { compose, decompose, defineLayouts, joinWorker } from '../../src/core/snowflake/layout.js';
import { ZookeeperLeaseLedger } from '../../src/adapters/zookeeper/zookeeper-lease-ledger.js';
import { type ServerProcess, sequoia } from '../helpers/cli.js';
import { type Lease, ok } from '../helpers/lease-explain.js';
import { connectZk, serveWithProvider, ZK, call } from '../helpers/zookeeper.js';
import { describeWithService } from '../helpers/services.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-zk-ledger-'));
const servers: ServerProcess[] = [];
let zk: zookeeper.Client | undefined;

afterAll(async () => {
  for (const s of servers) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  zk?.close();
  rmSync(dir, { recursive: true, force: true });
});

const describeZk = await describeWithService('ZooKeeper', async () => {
  zk = await connectZk();
});

describeZk('lease ledger: zookeeper provider (real ZooKeeper, real processes)', () => {
  it('records each claim; explain names the holder of each server; audit finds an ID from a worker id nobody held', async () => {
    const root = `/sequoia-test/${randomUUID().slice(0, 8)}`;
    const layoutName = `zl${randomInt(1e9)}`;
    // Two worker ids: one for the servers, one held by a planted node that keeps reporting.
    const spec = {
      epochMs: Date.UTC(2024, 0, 1) + randomInt(1_000_000_000),
      timeBits: 50,
      fields: [
        { name: 'worker', bits: 1, role: 'node' },
        { name: 'sequence', bits: 12, role: 'sequence' },
      ],
    };
    const layout = defineLayouts({ [layoutName]: spec }).get(layoutName)!;
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ layouts: { [layoutName]: spec } }));
    const provider = `zookeeper:${ZK}${root}?reclaim-after=2&report-interval=300`;
    const serve = async (name: string): Promise<ServerProcess> => {
      const s = await serveWithProvider(provider, join(dir, name), ['--config', config]);
      servers.push(s);
      return s;
    };
    const issue = async (s: ServerProcess): Promise<string[]> => {
      for (let i = 0; ; i++) {
        const r = await fetch(`${s.url}/v1/snowflake?count=30&layout=${layoutName}`);
        const body = (await r.json()) as { ids?: string[] };
        if (r.status === 200) return body.ids ?? [];
        // The worker id is taken in the background: a reclaim waits for the old node to fall silent.
        if (i > 60) throw new Error(`${r.status} ${JSON.stringify(body)}\n${s.output()}`);
        await new Promise((res) => setTimeout(res, 500));
      }
    };
    const workerOf = (id: string): number => joinWorker(layout, decompose(layout, BigInt(id)).values);
    const common = ['--layout', layoutName, '--config', config, '--store', `zookeeper://${ZK}${root}`];
    const explain = (id: string): Lease => (JSON.parse(ok(sequoia(['explain', id, ...common]))) as { lease: Lease }).lease;

    const a = await serve('a');
    const first = await issue(a);
    const w = workerOf(first[0] as string);
    expect(first.map(workerOf)).toEqual(first.map(() => w));

    // The other worker id: a node that keeps reporting, so the next server can only reclaim A's.
    const forever = `${root}/${layout.spaceKey}/forever`;
    const planted = `${forever}/planted-${String(1 - w).padStart(10, '0')}`;
    const nowTick = () => Math.floor((Date.now() - layout.epochMs) / layout.unitMs);
    await call<string>((cb) => zk?.create(planted, Buffer.from(JSON.stringify({ tick: nowTick() })), cb));
    const keepAlive = setInterval(() => zk?.setData(planted, Buffer.from(JSON.stringify({ tick: nowTick() })), -1, () => {}), 300);
    let second: string[];
    let b: ServerProcess;
    try {
      a.child.kill('SIGKILL');
      await a.exited;
      b = await serve('b');
      second = await issue(b);
    } finally {
      clearInterval(keepAlive);
    }
    expect(second.map(workerOf)).toEqual(second.map(() => w));
    expect(b.output()).toMatch(/zookeeper worker id reclaimed from a silent node/);
    b.child.kill('SIGTERM');
    await b.exited;

    // One ledger node per holding: A's (killed) and B's (a takeover, released at its stop).
    expect(await call<string[]>((cb) => zk?.getChildren(`${root}/${layout.spaceKey}/ledger`, cb))).toHaveLength(2);
    const ofA = explain(first[10] as string);
    expect(ofA.workerId).toBe(w);
    expect(ofA.heldBy).toHaveLength(1);
    expect(ofA.heldBy[0]).toMatchObject({
      pid: a.child.pid,
      began: 'grant',
      released: false,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
    const ofB = explain(second[10] as string);
    expect(ofB.heldBy).toHaveLength(1);
    expect(ofB.heldBy[0]).toMatchObject({ pid: b.child.pid, began: 'takeover', released: true });
    expect(ofB.heldBy[0]!.instance).not.toBe(ofA.heldBy[0]!.instance);

    // Audit: the IDs both returned are clean; an ID from the planted node's worker id (never in the ledger) is found.
    const file = join(dir, 'ids.txt');
    const all = [...first, ...second];
    writeFileSync(file, all.join('\n') + '\n');
    const clean = sequoia(['audit', file, ...common, '--json']);
    expect(clean.status, clean.stdout + clean.stderr).toBe(0);
    const stranger = compose(layout, nowTick() - 1000, { worker: 1 - w, sequence: 0 }).toString();
    writeFileSync(file, [...all, stranger].join('\n') + '\n');
    const found = sequoia(['audit', file, ...common, '--json']);
    expect(found.status, found.stdout + found.stderr).toBe(1);
    const report = JSON.parse(found.stdout) as { findings: Array<{ kind: string; count: number; examples: string[] }> };
    expect(report.findings.map((f) => [f.kind, f.count])).toEqual([['unheld-worker-id', 1]]);
    expect(report.findings[0]!.examples[0]!.split(' ')[0]).toBe(stranger);
    expect(explain(stranger)).toMatchObject({ workerId: 1 - w, heldBy: [] });

    // Pruning: nothing within the retention; every holding not written for longer, a batch at a time.
    const ledger = new ZookeeperLeaseLedger(ZK, root);
    try {
      expect(await ledger.pruneLedger(3_600_000, 10)).toBe(0);
      await new Promise((res) => setTimeout(res, 20));
      // The servers' other layouts have holdings under the root too.
      expect(await ledger.pruneLedger(1, 1)).toBe(1);
      expect(await ledger.pruneLedger(1, 100)).toBeGreaterThanOrEqual(1);
      expect(await ledger.holdings(layout.spaceKey)).toEqual([]);
    } finally {
      await ledger.close();
    }
  }, 120_000);
});
