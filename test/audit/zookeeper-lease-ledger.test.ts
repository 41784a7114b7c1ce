/**
 * The zookeeper provider's lease ledger end to end, on a real ZooKeeper
 * (.ci/zookeeper.sh) with real `sequoia serve` processes: a server issues
 * snowflake IDs and is SIGKILLed; another takes its worker id over (reclaim)
 * and stops cleanly. `explain --store zookeeper://…` names the right process
 * for the IDs of each, `audit --store zookeeper://…` finds clean IDs clean and
 * an ID planted with a worker id nobody held, and old holdings are pruned.
 * Each run has a root and a layout of its own.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type zookeeper from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { ZookeeperLeaseLedger } from '../../src/adapters/zookeeper/zookeeper-lease-ledger.js';
import type { ServerProcess } from '../helpers/cli.js';
import { ledgerEndToEnd } from '../helpers/lease-ledger-end-to-end.js';
import { connectZk, ZK, call } from '../helpers/zookeeper.js';
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
    await ledgerEndToEnd(
      {
        provider: `zookeeper:${ZK}${root}?reclaim-after=2&report-interval=300`,
        serveArgs: [],
        store: `zookeeper://${ZK}${root}`,
        layoutPrefix: 'zl',
        // The other worker id: a node that keeps reporting, so the next server can only reclaim A's.
        plant: async (layout, workerId, nowTick, during) => {
          const planted = `${root}/${layout.spaceKey}/forever/planted-${String(workerId).padStart(10, '0')}`;
          const report = () => Buffer.from(JSON.stringify({ tick: nowTick() }));
          await call<string>((cb) => zk?.create(planted, report(), cb));
          const keepAlive = setInterval(() => zk?.setData(planted, report(), -1, () => {}), 300);
          try {
            await during();
          } finally {
            clearInterval(keepAlive);
          }
          // The planted node's worker id is never in the ledger.
          return nowTick() - 1000;
        },
        afterStop: async (layout, b) => {
          expect(b.output()).toMatch(/zookeeper worker id reclaimed from a silent node/);
          // One ledger node per holding: A's (killed) and B's (a takeover, released at its stop).
          expect(await call<string[]>((cb) => zk?.getChildren(`${root}/${layout.spaceKey}/ledger`, cb))).toHaveLength(2);
        },
        prune: async (layout) => {
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
        },
      },
      dir,
      servers,
    );
  }, 120_000);
});
