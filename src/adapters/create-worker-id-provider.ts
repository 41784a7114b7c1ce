/**
 * Turns a provider spec and the store URL into a WorkerIdProvider:
 *   lease (default)        sql-lease on the configured store (sqlite, postgres, mysql, memory)
 *   static:N               worker id N, registered like a lease when the store can hold leases
 *   k8s-ordinal[:OFFSET]   the StatefulSet ordinal of the hostname (+ OFFSET), registered likewise
 *   worker-node            a new row (hence a new id) per start, uid-generator style
 *   zookeeper:HOST:PORT[,…][/ROOT][?reclaim-after=S&node=NAME]  a sequential node per host:port, as Leaf
 * A multi-store list leases on its first SQL entry (leases need one point of order).
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/errors.js';
import type { Logger } from '../ports/logger.js';
import type { WorkerIdProvider } from '../ports/worker-id-provider.js';
import type { WorkerLeaseStore } from '../ports/worker-lease-store.js';
import { k8sOrdinal } from './k8s/k8s-ordinal.js';
import { LeaseWorkerIdProvider, WorkerNodeWorkerIdProvider } from './lease/lease-worker-id-provider.js';
import { MemoryWorkerLeaseStore } from './memory/memory-worker-lease-store.js';
import { MysqlWorkerLeaseStore } from './mysql/mysql-worker-lease-store.js';
import { PostgresWorkerLeaseStore } from './postgres/postgres-worker-lease-store.js';
import { SqliteWorkerLeaseStore } from './sqlite/sqlite-worker-lease-store.js';
import { StateDir } from './state-dir/state-dir.js';
import { TickReservingProvider } from './state-dir/tick-reserving-provider.js';
import { StaticWorkerIdProvider } from './static/static-worker-id-provider.js';
import { ZookeeperWorkerIdProvider, parseZookeeperSpec } from './zookeeper/zookeeper-worker-id-provider.js';

export const WORKER_ID_PROVIDER_HELP = 'lease, static:N, k8s-ordinal[:OFFSET], worker-node or zookeeper:HOST:PORT[/ROOT]';

/** The lease store on the same backend as the segment store, or undefined (redis). */
export function createWorkerLeaseStore(storeUrl: string): WorkerLeaseStore | undefined {
  for (const raw of storeUrl.split(',')) {
    const u = raw.trim();
    if (u === 'memory:') return new MemoryWorkerLeaseStore();
    if (u.startsWith('sqlite:')) return new SqliteWorkerLeaseStore(u.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''));
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(u)?.[1]?.toLowerCase();
    if (scheme === 'postgres' || scheme === 'postgresql' || scheme === 'mysql') {
      const url = new URL(u);
      url.searchParams.delete('table');
      return scheme === 'mysql' ? new MysqlWorkerLeaseStore(url.toString()) : new PostgresWorkerLeaseStore(url.toString());
    }
  }
  return undefined;
}

export interface ProviderOptions {
  readonly ttlMs?: number;
  readonly hostname?: string;
  /**
   * The server's state directory: the last snowflake tick of every provider
   * is reserved there (see TickReservingProvider); zookeeper also caches its
   * id there. Default for zookeeper './data'; without it no tick is recorded.
   */
  readonly stateDir?: string | undefined;
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

/** The provider for `spec`, its last tick reserved in the state directory when one is given. */
export function createWorkerIdProvider(spec: string, storeUrl: string, o: ProviderOptions = {}): WorkerIdProvider {
  const p = createBareProvider(spec, storeUrl, o);
  return o.stateDir === undefined ? p : new TickReservingProvider(p, new StateDir(o.stateDir));
}

function createBareProvider(spec: string, storeUrl: string, o: ProviderOptions): WorkerIdProvider {
  if (spec.trim().startsWith('zookeeper:')) {
    const z = parseZookeeperSpec(spec);
    // ZooKeeper names its node after host:port and this directory: each worker of one port needs its own.
    const dir = o.stateDir ?? './data';
    const stateDir = o.workerSlot === undefined ? dir : workerStateDir(dir, o.workerSlot);
    return new ZookeeperWorkerIdProvider({ ...z, stateDir, port: o.port, hostname: o.hostname, logger: o.logger });
  }
  const m = /^(lease|sql-lease|static|k8s-ordinal|worker-node)(?::([0-9]{1,9}))?$/.exec(spec.trim());
  if (!m) throw new InvalidArgumentError(`worker id provider must be ${WORKER_ID_PROVIDER_HELP} (got ${JSON.stringify(spec)})`);
  const kind = m[1] as string;
  const arg = m[2] === undefined ? undefined : Number(m[2]);
  const store = createWorkerLeaseStore(storeUrl);
  if (kind === 'static' && arg === undefined) throw new InvalidArgumentError('worker id provider static needs an id: static:N');
  if (kind === 'static' || kind === 'k8s-ordinal') {
    const id = kind === 'static' ? (arg as number) : k8sOrdinal(o.hostname ?? hostname(), arg ?? 0);
    if (!store) return new StaticWorkerIdProvider(id, kind);
    return new LeaseWorkerIdProvider(store, { ttlMs: o.ttlMs, fixedWorkerId: id, kind: `${kind}+lease(${store.kind})` });
  }
  if (!store) {
    throw new InvalidArgumentError(
      `worker id provider ${kind} needs a store that can hold leases (sqlite, postgres, mysql); with this store use static:N or k8s-ordinal`,
    );
  }
  if (kind === 'worker-node') return new WorkerNodeWorkerIdProvider(store);
  if (arg !== undefined) throw new InvalidArgumentError('worker id provider lease takes no argument');
  return new LeaseWorkerIdProvider(store, { ttlMs: o.ttlMs });
}
