/**
 * The tests' etcd (`.ci/etcd.sh` starts Debian's on 127.0.0.1:2379): its
 * address, a probe that fails fast when none answers, and a key prefix of
 * each test's own, so tests running at once never meet.
 */
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';

export const ETCD = process.env.SEQUOIA_TEST_ETCD ?? '127.0.0.1:2379';

/** A prefix no other test uses. */
export const etcdPrefix = (): string => `/sequoia-test/${randomUUID().slice(0, 8)}`;

/** Throws, naming the script that starts one, when no etcd answers at ETCD within `timeoutMs`. */
export async function probeEtcd(timeoutMs = 2000): Promise<void> {
  const c = new Etcd3({ hosts: `http://${ETCD}`, dialTimeout: timeoutMs });
  try {
    await c.kv.range({ key: Buffer.from('/sequoia-probe') }, { deadline: new Date(Date.now() + timeoutMs) });
  } catch (e) {
    throw new Error(`no etcd at ${ETCD} (run .ci/etcd.sh): ${(e as Error).message}`, { cause: e });
  } finally {
    c.close();
  }
}

/** Removes every key under `prefix` (a test's own). */
export async function clearEtcdPrefix(prefix: string): Promise<void> {
  const c = new Etcd3({ hosts: `http://${ETCD}` });
  try {
    await c.delete().prefix(`${prefix}/`);
  } finally {
    c.close();
  }
}
