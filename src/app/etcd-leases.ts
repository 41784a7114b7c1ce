/**
 * The etcd lease store, loaded on first use. It lives apart from
 * worker-id-providers.ts so that the public type declarations (which reach
 * that file through `createWorkerIdProvider`) never name `etcd3`, an optional
 * peer a consumer may not have installed.
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { EtcdSpec } from '../adapters/etcd/etcd-spec.js';
import type * as EtcdLeaseStoreModule from '../adapters/etcd/etcd-worker-lease-store.js';
import type { WorkerLeaseStore } from '../ports/worker-lease-store.js';

/**
 * The etcd lease store's module. Its client, `etcd3`, is an optional peer
 * dependency: it brings gRPC and protobufjs (whose install script a
 * consumer's npm would list as not covered by `allowScripts`) to every
 * install, for one provider most users never name. Missing, it is a clear
 * error naming the package to install.
 */
export async function importEtcdLeaseStore(): Promise<typeof EtcdLeaseStoreModule> {
  try {
    return await import('../adapters/etcd/etcd-worker-lease-store.js');
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes("'etcd3'")) {
      throw new InvalidArgumentError(
        'the etcd worker-id provider needs the etcd3 package, an optional peer dependency of sequoia-id: npm install etcd3@1.1.2',
      );
    }
    throw e;
  }
}

/** The etcd lease store, its client (gRPC) loaded at the first lease: a server that asks for no snowflake ID loads neither. */
export function lazyEtcdLeases(spec: EtcdSpec): WorkerLeaseStore {
  let opened: Promise<WorkerLeaseStore> | undefined;
  const open = (): Promise<WorkerLeaseStore> => (opened ??= importEtcdLeaseStore().then((m) => new m.EtcdWorkerLeaseStore(spec)));
  return {
    kind: 'etcd',
    init: async () => (await open()).init(),
    acquire: async (req) => (await open()).acquire(req),
    renew: async (lease, ttlMs, lastTick) => (await open()).renew(lease, ttlMs, lastTick),
    release: async (lease, lastTick) => (await open()).release(lease, lastTick),
    registerNode: async (space, host, count) => (await open()).registerNode(space, host, count),
    holdings: async (space, workerId) => (await open()).holdings(space, workerId),
    entries: async (space, workerId) => (await open()).entries(space, workerId),
    pruneLedger: async (retentionMs, limit) => (await open()).pruneLedger(retentionMs, limit),
    close: async () => {
      if (opened) await (await opened).close();
    },
  };
}
