/**
 * The tests' ZooKeeper (`.ci/zookeeper.sh` starts one): its address, a
 * connection that fails fast when none answers, the client's callbacks as
 * promises, and a `sequoia serve` on the zookeeper provider.
 */
import { join } from 'node:path';
import zookeeper from 'node-zookeeper-client';
import { type ServerProcess, startServe } from './cli.js';

export const ZK = process.env.SEQUOIA_TEST_ZOOKEEPER ?? '127.0.0.1:2181';

export function connectZk(timeoutMs = 2000): Promise<zookeeper.Client> {
  const c = zookeeper.createClient(ZK, { sessionTimeout: 6000, retries: 0 });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      c.close();
      reject(new Error(`no ZooKeeper at ${ZK} (run .ci/zookeeper.sh)`));
    }, timeoutMs);
    c.once('connected', () => {
      clearTimeout(t);
      resolve(c);
    });
    c.connect();
  });
}

/** One driver request as a promise. */
export function call<T>(f: (cb: (e: Error | zookeeper.Exception | null, r: T) => void) => void): Promise<T> {
  return new Promise((res, rej) => f((e, r) => (e ? rej(e instanceof Error ? e : new Error(e.toString())) : res(r))));
}

/** `sequoia serve` (one process, an SQLite store in its state dir) taking its worker id from `provider`. */
export function serveWithProvider(provider: string, stateDir: string, args: readonly string[] = []): Promise<ServerProcess> {
  return startServe([
    '--workers',
    '1',
    ...args,
    '--store',
    `sqlite:${join(stateDir, 'x.db')}`,
    '--state-dir',
    stateDir,
    '--worker-id-provider',
    provider,
  ]);
}

/** A node's JSON data (as Leaf and Sequoia write it) and its stat. */
export function getJson(zk: zookeeper.Client | undefined, path: string): Promise<{ data: Record<string, unknown>; stat: zookeeper.Stat }> {
  return new Promise((res, rej) =>
    zk?.getData(path, (e, d, stat) =>
      e ? rej(new Error(e.toString())) : res({ data: JSON.parse(d.toString()) as Record<string, unknown>, stat }),
    ),
  );
}
