/**
 * The etcd provider's lease ledger end to end, on a real etcd (.ci/etcd.sh)
 * with real `sequoia serve` processes: a server issues snowflake IDs and is
 * SIGKILLed; another takes its worker id over once etcd dropped the lease and
 * stops cleanly. `explain --store etcd://…` names the right process for the
 * IDs of each, `audit --store etcd://…` finds their IDs clean and an ID
 * planted with a worker id nobody held at its tick, and old holdings are
 * pruned. Each run has a prefix and a layout of its own.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { EtcdWorkerLeaseStore } from '../../src/adapters/etcd/etcd-worker-lease-store.js';
import { parseEtcdSpec } from '../../src/adapters/etcd/etcd-spec.js';
import { compose, decompose, defineLayouts, joinWorker } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, sequoia } from '../helpers/cli.js';
import { ETCD, clearEtcdPrefix, etcdPrefix, probeEtcd } from '../helpers/etcd.js';
import { type Lease, ok } from '../helpers/lease-explain.js';
import { describeWithService } from '../helpers/services.js';
import { serveWithProvider } from '../helpers/zookeeper.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-etcd-ledger-'));
const servers: ServerProcess[] = [];
const prefix = etcdPrefix();
const SPEC = `etcd://${ETCD}${prefix}`;
let store: EtcdWorkerLeaseStore | undefined;

afterAll(async () => {
  for (const s of servers) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  await store?.close();
  await clearEtcdPrefix(prefix).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const describeEtcd = await describeWithService('etcd', probeEtcd);

describeEtcd('lease ledger: etcd provider (real etcd, real processes)', () => {
  it('records each holding; explain names the holder of each server; audit finds an ID from a worker id nobody held', async () => {
    const layoutName = `el${randomInt(1e9)}`;
    // Two worker ids: one for the servers, one held by a planted holder.
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
    const serve = async (name: string): Promise<ServerProcess> => {
      const s = await serveWithProvider(SPEC, join(dir, name), ['--config', config, '--worker-lease-ttl-ms', '2000']);
      servers.push(s);
      return s;
    };
    const issue = async (s: ServerProcess): Promise<string[]> => {
      for (let i = 0; ; i++) {
        const r = await fetch(`${s.url}/v1/snowflake?count=30&layout=${layoutName}`);
        const body = (await r.json()) as { ids?: string[] };
        if (r.status === 200) return body.ids ?? [];
        // A takeover waits for etcd to drop the old holder's lease.
        if (i > 60) throw new Error(`${r.status} ${JSON.stringify(body)}\n${s.output()}`);
        await new Promise((res) => setTimeout(res, 500));
      }
    };
    const workerOf = (id: string): number => joinWorker(layout, decompose(layout, BigInt(id)).values);
    const common = ['--layout', layoutName, '--config', config, '--store', SPEC];
    const explain = (id: string): Lease => (JSON.parse(ok(sequoia(['explain', id, ...common]))) as { lease: Lease }).lease;
    const nowTick = () => Math.floor((Date.now() - layout.epochMs) / layout.unitMs);

    const a = await serve('a');
    const first = await issue(a);
    const w = workerOf(first[0] as string);
    expect(first.map(workerOf)).toEqual(first.map(() => w));

    // The other worker id, held for a minute: the next server can only take A's over.
    store = new EtcdWorkerLeaseStore(parseEtcdSpec(SPEC));
    const plantedAt = nowTick();
    expect(
      await store.acquire({ space: layout.spaceKey, owner: 'planted/1/x', ttlMs: 60_000, workerCount: 2, want: 1 - w, nowTick: plantedAt }),
    ).toMatchObject({ workerId: 1 - w });

    a.child.kill('SIGKILL');
    await a.exited;
    const b = await serve('b');
    const second = await issue(b);
    expect(second.map(workerOf)).toEqual(second.map(() => w));
    b.child.kill('SIGTERM');
    await b.exited;

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

    // Audit: the IDs both returned are clean; an ID on the planted worker id from before it was held is found.
    const file = join(dir, 'ids.txt');
    const all = [...first, ...second];
    writeFileSync(file, all.join('\n') + '\n');
    const clean = sequoia(['audit', file, ...common, '--json']);
    expect(clean.status, clean.stdout + clean.stderr).toBe(0);
    const stranger = compose(layout, plantedAt - 100_000, { worker: 1 - w, sequence: 0 }).toString();
    writeFileSync(file, [...all, stranger].join('\n') + '\n');
    const found = sequoia(['audit', file, ...common, '--json']);
    expect(found.status, found.stdout + found.stderr).toBe(1);
    const report = JSON.parse(found.stdout) as { findings: Array<{ kind: string; count: number; examples: string[] }> };
    expect(report.findings.map((f) => [f.kind, f.count])).toEqual([['unheld-worker-id', 1]]);
    expect(explain(stranger)).toMatchObject({ workerId: 1 - w, heldBy: [] });

    // Pruning: nothing within the retention; every holding not written for longer, a batch at a time.
    expect(await store.pruneLedger(3_600_000, 10)).toBe(0);
    await new Promise((res) => setTimeout(res, 20));
    expect(await store.pruneLedger(1, 1)).toBe(1);
    while ((await store.pruneLedger(1, 100)) > 0);
    expect(await store.holdings(layout.spaceKey)).toEqual([]);
  }, 120_000);
});
