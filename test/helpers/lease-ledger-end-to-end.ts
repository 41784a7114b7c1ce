/**
 * A lease ledger end to end with real `sequoia serve` processes, the body the
 * etcd and the ZooKeeper providers' tests share: a server issues snowflake
 * IDs on a layout with two worker ids and is SIGKILLed; the other worker id
 * is held by a planted holder, so a second server can only take the first
 * one over, and stops cleanly. `explain --store …` names the right process
 * for the IDs of each, `audit --store …` finds their IDs clean and an ID on
 * the planted worker id that no holding covers, and old holdings are pruned.
 * The provider's own part (its spec, the planted holder, its ledger's store)
 * is passed in.
 */
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { compose, decompose, defineLayouts, joinWorker, type Layout } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, sequoia } from './cli.js';
import { type Lease, ok } from './lease-explain.js';
import { serveWithProvider } from './zookeeper.js';

export interface LedgerProvider {
  /** `--worker-id-provider` of the servers. */
  readonly provider: string;
  /** More `serve` arguments (a lease's ttl). */
  readonly serveArgs: readonly string[];
  /** `--store` of explain and audit. */
  readonly store: string;
  /** Layout names start with it (a run's own layout). */
  readonly layoutPrefix: string;
  /**
   * Holds worker id `workerId` for the rest of the run (`during` is the
   * second server's start and first IDs); resolves with a tick no holding
   * of that worker id covers.
   */
  readonly plant: (layout: Layout, workerId: number, nowTick: () => number, during: () => Promise<void>) => Promise<number>;
  /** What the provider adds to check once both servers have stopped. */
  readonly afterStop?: (layout: Layout, b: ServerProcess) => Promise<void>;
  /** Prunes the ledger with the provider's own store; `holdings` must be empty after. */
  readonly prune: (layout: Layout) => Promise<void>;
}

/** The run: `dir` holds the state dirs and files, `servers` collects the processes for the caller's cleanup. */
export async function ledgerEndToEnd(p: LedgerProvider, dir: string, servers: ServerProcess[]): Promise<void> {
  const layoutName = `${p.layoutPrefix}${randomInt(1e9)}`;
  // Two worker ids: one for the servers, one held by the planted holder.
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
    const s = await serveWithProvider(p.provider, join(dir, name), ['--config', config, ...p.serveArgs]);
    servers.push(s);
    return s;
  };
  const issue = async (s: ServerProcess): Promise<string[]> => {
    for (let i = 0; ; i++) {
      const r = await fetch(`${s.url}/v1/snowflake?count=30&layout=${layoutName}`);
      const body = (await r.json()) as { ids?: string[] };
      if (r.status === 200) return body.ids ?? [];
      // A takeover waits for the old holding to end (a lease dropped, a node silent).
      if (i > 60) throw new Error(`${r.status} ${JSON.stringify(body)}\n${s.output()}`);
      await new Promise((res) => setTimeout(res, 500));
    }
  };
  const workerOf = (id: string): number => joinWorker(layout, decompose(layout, BigInt(id)).values);
  const common = ['--layout', layoutName, '--config', config, '--store', p.store];
  const explain = (id: string): Lease => (JSON.parse(ok(sequoia(['explain', id, ...common]))) as { lease: Lease }).lease;
  const nowTick = () => Math.floor((Date.now() - layout.epochMs) / layout.unitMs);

  const a = await serve('a');
  const first = await issue(a);
  const w = workerOf(first[0] as string);
  expect(first.map(workerOf)).toEqual(first.map(() => w));

  let b: ServerProcess | undefined;
  let second: string[] = [];
  const unheldTick = await p.plant(layout, 1 - w, nowTick, async () => {
    a.child.kill('SIGKILL');
    await a.exited;
    b = await serve('b');
    second = await issue(b);
  });
  if (b === undefined) throw new Error('the planted holder never let the second server start');
  expect(second.map(workerOf)).toEqual(second.map(() => w));
  b.child.kill('SIGTERM');
  await b.exited;
  await p.afterStop?.(layout, b);

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

  // Audit: the IDs both returned are clean; an ID on the planted worker id that no holding covers is found.
  const file = join(dir, 'ids.txt');
  const all = [...first, ...second];
  writeFileSync(file, all.join('\n') + '\n');
  const clean = sequoia(['audit', file, ...common, '--json']);
  expect(clean.status, clean.stdout + clean.stderr).toBe(0);
  const stranger = compose(layout, unheldTick, { worker: 1 - w, sequence: 0 }).toString();
  writeFileSync(file, [...all, stranger].join('\n') + '\n');
  const found = sequoia(['audit', file, ...common, '--json']);
  expect(found.status, found.stdout + found.stderr).toBe(1);
  const report = JSON.parse(found.stdout) as { findings: Array<{ kind: string; count: number; examples: string[] }> };
  expect(report.findings.map((f) => [f.kind, f.count])).toEqual([['unheld-worker-id', 1]]);
  expect(report.findings[0]!.examples[0]!.split(' ')[0]).toBe(stranger);
  expect(explain(stranger)).toMatchObject({ workerId: 1 - w, heldBy: [] });

  // Pruning: nothing within the retention; every holding not written for longer, a batch at a time.
  await p.prune(layout);
}
