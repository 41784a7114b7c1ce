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
import { DEFAULT_STATE_DIR } from './defaults.js';
import type { Logger } from '../ports/logger.js';
import type { WorkerIdProvider } from '../ports/worker-id-provider.js';
import type { WorkerLeaseStore } from '../ports/worker-lease-store.js';
import { k8sOrdinal } from '../adapters/k8s/k8s-ordinal.js';
import { LeaseWorkerIdProvider, WorkerNodeWorkerIdProvider } from '../adapters/lease/lease-worker-id-provider.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { type TickRecord, TickReservingProvider } from '../adapters/state-dir/tick-reserving-provider.js';
import { StaticWorkerIdProvider } from '../adapters/static/static-worker-id-provider.js';
import { ZookeeperWorkerIdProvider, parseZookeeperSpec } from '../adapters/zookeeper/zookeeper-worker-id-provider.js';

export const WORKER_ID_PROVIDER_HELP = 'lease, static:N, k8s-ordinal[:OFFSET], worker-node or zookeeper:HOST:PORT[/ROOT]';

export interface ProviderOptions {
  readonly ttlMs?: number;
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
 * The provider for `spec`, its last tick reserved in the state directory when
 * one is given. `leases` answers the lease store on the configured backend
 * (see `openBackend`), asked only by the providers that use one.
 */
export function createWorkerIdProvider(spec: string, leases: () => WorkerLeaseStore | undefined, o: ProviderOptions = {}): WorkerIdProvider {
  const p = createBareProvider(spec, leases, o);
  if (o.ticks) return new TickReservingProvider(p, o.ticks);
  return o.stateDir === undefined ? p : new TickReservingProvider(p, new StateDir(o.stateDir));
}

function createBareProvider(spec: string, leases: () => WorkerLeaseStore | undefined, o: ProviderOptions): WorkerIdProvider {
  if (spec.trim().startsWith('zookeeper:')) {
    const z = parseZookeeperSpec(spec);
    // ZooKeeper names its node after host:port and this directory: each worker of one port needs its own.
    const dir = o.stateDir ?? DEFAULT_STATE_DIR;
    const stateDir = o.workerSlot === undefined ? dir : workerStateDir(dir, o.workerSlot);
    return new ZookeeperWorkerIdProvider({ ...z, stateDir, port: o.port, hostname: o.hostname, logger: o.logger });
  }
  const m = /^(lease|sql-lease|static|k8s-ordinal|worker-node)(?::([0-9]{1,9}))?$/.exec(spec.trim());
  if (!m) throw new InvalidArgumentError(`worker id provider must be ${WORKER_ID_PROVIDER_HELP} (got ${JSON.stringify(spec)})`);
  const kind = m[1] as string;
  const arg = m[2] === undefined ? undefined : Number(m[2]);
  const store = leases();
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
