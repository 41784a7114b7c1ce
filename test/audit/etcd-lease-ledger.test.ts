/**
 * The etcd provider's lease ledger end to end, on a real etcd (.ci/etcd.sh)
 * with real `sequoia serve` processes: a server issues snowflake IDs and is
 * SIGKILLed; another takes its worker id over once etcd dropped the lease and
 * stops cleanly. `explain --store etcd://…` names the right process for the
 * IDs of each, `audit --store etcd://…` finds their IDs clean and an ID
 * planted with a worker id nobody held at its tick, and old holdings are
 * pruned. Each run has a prefix and a layout of its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { EtcdWorkerLeaseStore } from '../../src/adapters/etcd/etcd-worker-lease-store.js';
import { parseEtcdSpec } from '../../src/adapters/etcd/etcd-spec.js';
import type { ServerProcess } from '../helpers/cli.js';
import { ETCD, clearEtcdPrefix, etcdPrefix, probeEtcd } from '../helpers/etcd.js';
import { ledgerEndToEnd } from '../helpers/lease-ledger-end-to-end.js';
import { describeWithService } from '../helpers/services.js';

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
    const leases = (store = new EtcdWorkerLeaseStore(parseEtcdSpec(SPEC)));
    await ledgerEndToEnd(
      {
        provider: SPEC,
        serveArgs: ['--worker-lease-ttl-ms', '2000'],
        store: SPEC,
        layoutPrefix: 'el',
        // The other worker id, held for a minute: the next server can only take A's over (once etcd dropped A's lease).
        plant: async (layout, workerId, nowTick, during) => {
          const plantedAt = nowTick();
          const grant = { space: layout.spaceKey, owner: 'planted/1/x', ttlMs: 60_000, workerCount: 2, want: workerId, nowTick: plantedAt };
          expect(await leases.acquire(grant)).toMatchObject({ workerId });
          await during();
          return plantedAt - 100_000;
        },
        prune: async (layout) => {
          expect(await leases.pruneLedger(3_600_000, 10)).toBe(0);
          await new Promise((res) => setTimeout(res, 20));
          expect(await leases.pruneLedger(1, 1)).toBe(1);
          while ((await leases.pruneLedger(1, 100)) > 0);
          expect(await leases.holdings(layout.spaceKey)).toEqual([]);
        },
      },
      dir,
      servers,
    );
  }, 120_000);
});
