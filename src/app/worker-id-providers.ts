/**
 * Turns a provider spec (its grammar and parser: worker-id-provider-spec.ts)
 * and the store's lease store into a WorkerIdProvider, its last tick reserved
 * in the state directory. A multi-store list leases on its first entry
 * (leases need one point of order).
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/errors.js';
import { DEFAULT_STATE_DIR } from './defaults.js';
import type { Logger } from '../ports/logger.js';
import type { WorkerIdProvider } from '../ports/worker-id-provider.js';
import type { WorkerLeaseStore } from '../ports/worker-lease-store.js';
import { k8sOrdinal } from '../adapters/k8s/k8s-ordinal.js';
import { LeaseWorkerIdProvider, WorkerNodeWorkerIdProvider } from '../adapters/lease/lease-worker-id-provider.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { type TickRecord, TickReservingProvider } from '../adapters/state-dir/tick-reserving-provider.js';
import { StaticWorkerIdProvider } from '../adapters/static/static-worker-id-provider.js';
import { zookeeperTtlMs } from '../adapters/zookeeper/zookeeper-spec.js';
import { type WorkerIdProviderSpec, type WorkerNodeTableSpec, parseWorkerIdProvider } from './worker-id-provider-spec.js';
import type { WorkerNodeTable } from '../ports/worker-node-table.js';
import { UidWorkerNodeProvider } from '../adapters/lease/uid-worker-node-provider.js';
import { VERSION } from '../version.js';
import { lazyEtcdLeases } from './etcd-leases.js';

export interface ProviderOptions {
  readonly ttlMs?: number;
  /** Days the lease ledger keeps its rows (0: for ever). Default 90. */
  readonly ledgerRetentionDays?: number | undefined;
  readonly hostname?: string;
  /**
   * The server's state directory: the last snowflake tick of every provider
   * is reserved there (see TickReservingProvider); zookeeper also caches its
   * id there. Default for zookeeper './data'; without it no tick is recorded.
   */
  readonly stateDir?: string | undefined;
  /** The state dir already open (a server's, off the event loop), for the ticks; else opened from `stateDir`. */
  readonly ticks?: TickRecord | undefined;
  /** The cluster worker's slot when this process is one of `serve --workers N`. */
  readonly workerSlot?: number | undefined;
  /** zookeeper: the server's port, part of the node name (host:port). */
  readonly port?: number;
  readonly logger?: Logger;
}

/** Worker slot i's own directory, for what must differ per worker of one port (the ZooKeeper node and its cached id). */
export function workerStateDir(stateDir: string, slot: number): string {
  return join(stateDir, 'workers', String(slot));
}

/**
 * The provider for `spec` (a spec string is parsed here; a parsed one is
 * taken as is), its last tick reserved in the state directory when one is
 * given. `leases` answers the lease store on the configured backend (see
 * `openBackend`), asked only by the providers that use one.
 */
export function createWorkerIdProvider(
  spec: string | WorkerIdProviderSpec,
  leases: () => WorkerLeaseStore | undefined,
  o: ProviderOptions = {},
): WorkerIdProvider {
  const p = createBareProvider(typeof spec === 'string' ? parseWorkerIdProvider(spec) : spec, leases, o);
  if (o.ticks) return new TickReservingProvider(p, o.ticks);
  return o.stateDir === undefined ? p : new TickReservingProvider(p, new StateDir(o.stateDir));
}

function createBareProvider(spec: WorkerIdProviderSpec, leases: () => WorkerLeaseStore | undefined, o: ProviderOptions): WorkerIdProvider {
  if (spec.kind === 'zookeeper') {
    const { version, ledgerRetentionMs } = leaseOptions(o);
    const common = { version, ledgerRetentionMs, port: o.port, logger: o.logger };
    const z = spec.zookeeper;
    if (z.leafName !== undefined) {
      const { connect, identity, reportIntervalMs, leafName } = z;
      return lazyZookeeper('zookeeper(leaf)', reportIntervalMs, async () => {
        const { LeafZookeeperWorkerIdProvider } = await import('../adapters/zookeeper/zookeeper-leaf-provider.js');
        return new LeafZookeeperWorkerIdProvider({ ...common, connect, identity, reportIntervalMs, leafName });
      });
    }
    // ZooKeeper names its node after host:port and this directory: each worker of one port needs its own.
    const dir = o.stateDir ?? DEFAULT_STATE_DIR;
    const stateDir = o.workerSlot === undefined ? dir : workerStateDir(dir, o.workerSlot);
    return lazyZookeeper('zookeeper', z.reportIntervalMs, async () => {
      const { ZookeeperWorkerIdProvider } = await import('../adapters/zookeeper/zookeeper-worker-id-provider.js');
      return new ZookeeperWorkerIdProvider({ ...z, ...common, stateDir, hostname: o.hostname });
    });
  }
  if (spec.kind === 'etcd') {
    // Leases as on a SQL store (the provider's fencing and ledger), held in etcd.
    return new LeaseWorkerIdProvider(lazyEtcdLeases(spec.etcd), { ...leaseOptions(o), kind: 'etcd' });
  }
  if (spec.kind === 'worker-node' && spec.table !== undefined) {
    return new UidWorkerNodeProvider(lazyWorkerNodeTable(spec.table), { hostName: o.hostname, port: o.port });
  }
  const store = leases();
  if (spec.kind === 'static' || spec.kind === 'k8s-ordinal') {
    const id = spec.kind === 'static' ? spec.workerId : k8sOrdinal(o.hostname ?? hostname(), spec.offset);
    if (!store) return new StaticWorkerIdProvider(id, spec.kind);
    return new LeaseWorkerIdProvider(store, { ...leaseOptions(o), fixedWorkerId: id, kind: `${spec.kind}+lease(${store.kind})` });
  }
  if (!store) {
    throw new InvalidArgumentError(
      `worker id provider ${spec.kind} needs a store that can hold leases (sqlite, postgres, mysql, redis); with this store use static:N or k8s-ordinal`,
    );
  }
  if (spec.kind === 'worker-node') return new WorkerNodeWorkerIdProvider(store);
  return new LeaseWorkerIdProvider(store, leaseOptions(o));
}

function leaseOptions(o: ProviderOptions): { ttlMs?: number; version: string; ledgerRetentionMs?: number } {
  return {
    ...(o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}),
    version: VERSION,
    ...(o.ledgerRetentionDays !== undefined ? { ledgerRetentionMs: o.ledgerRetentionDays * 86_400_000 } : {}),
  };
}

/**
 * A ZooKeeper provider whose client library loads at the first call: it and
 * its own dependencies are a large share of a server's start, and a server on
 * another provider never needs them. The interval is checked now, as the
 * provider itself would.
 */
function lazyZookeeper(kind: string, reportIntervalMs: number | undefined, make: () => Promise<WorkerIdProvider>): WorkerIdProvider {
  const ttlMs = zookeeperTtlMs(reportIntervalMs);
  let made: Promise<WorkerIdProvider> | undefined;
  const provider = () => (made ??= make());
  return {
    kind,
    leased: true,
    ttlMs,
    acquire: async (space, exclude) => (await provider()).acquire(space, exclude),
    renew: async (space, grant, ceilingTick) => (await provider()).renew(space, grant, ceilingTick),
    release: async (space, grant, lastTick) => (await provider()).release(space, grant, lastTick),
    close: async () => {
      if (made) await (await made.catch(() => undefined))?.close();
    },
  };
}

/** The table's adapter, and its driver, loaded at the first insert: a server that never asks for a snowflake ID loads neither. */
function lazyWorkerNodeTable(t: WorkerNodeTableSpec): WorkerNodeTable {
  let opened: Promise<WorkerNodeTable> | undefined;
  const open = (): Promise<WorkerNodeTable> =>
    (opened ??=
      t.engine === 'mysql'
        ? import('../adapters/mysql/mysql-worker-node-table.js').then((m) => new m.MysqlWorkerNodeTable(t.url, t.table))
        : import('../adapters/postgres/postgres-worker-node-table.js').then((m) => new m.PostgresWorkerNodeTable(t.url, t.table)));
  return {
    kind: `${t.engine} ${t.table}`,
    addWorkerNode: async (row) => (await open()).addWorkerNode(row),
    close: async () => {
      if (opened) await (await opened).close();
    },
  };
}
