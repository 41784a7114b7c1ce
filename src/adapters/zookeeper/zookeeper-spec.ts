/** The ZooKeeper providers' spec (`zookeeper:HOST:PORT…`), where each keeps its lease ledger, and the default node identity. */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { InvalidArgumentError } from '../../core/errors.js';

export interface ZookeeperSpec {
  readonly connect: string;
  readonly root: string;
  readonly reclaimAfterMs: number | undefined;
  readonly identity: string | undefined;
  readonly reportIntervalMs: number | undefined;
  /** `?leaf=NAME`: Leaf-snowflake's own tree `/snowflake/NAME/forever/{ip}:{port}-{seq}` (zookeeper-leaf-provider.ts). */
  readonly leafName?: string | undefined;
}

/** A Leaf node name is `{ip}:{port}`: Leaf splits child names at `-`, so none may hold one. */
export const LEAF_IDENTITY = /^[A-Za-z0-9._]{1,100}:[0-9]{1,5}$/;

export const DEFAULT_ZOOKEEPER_ROOT = '/sequoia/snowflake';

/**
 * A ZooKeeper provider's lease length for its report interval (default 3 s):
 * the service renews every ttl/3 and reserves 2·ttl/3 ahead, so it reports
 * every interval and reserves two ahead.
 */
export function zookeeperTtlMs(reportIntervalMs: number | undefined): number {
  const interval = reportIntervalMs ?? 3000;
  if (!Number.isSafeInteger(interval) || interval < 100)
    throw new InvalidArgumentError('zookeeper report interval must be an integer of at least 100 ms');
  return 3 * interval;
}
/**
 * Where leaf=NAME keeps its lease ledger (zookeeper-lease-ledger.ts):
 * `/sequoia/leaf/NAME`, Sequoia's own path, outside Leaf's `/snowflake/NAME`,
 * whose nodes Leaf servers read.
 */
export const leafLedgerRoot = (leafName: string): string => `/sequoia/leaf/${leafName}`;

/** The root of the spec's lease ledger: the provider's root, or Sequoia's path beside Leaf's tree. */
export function ledgerRootOf(spec: ZookeeperSpec): string {
  return spec.leafName === undefined ? spec.root : leafLedgerRoot(spec.leafName);
}

const HOST_PORT = /^[A-Za-z0-9._-]+:[0-9]{1,5}$/;
/** What a node identity may hold: characters a ZooKeeper path can carry. */
export const IDENTITY = /^[A-Za-z0-9._:@~-]{1,200}$/;

/**
 * Parses `zookeeper:HOST:PORT[,HOST:PORT…][/ROOT][?reclaim-after=SECONDS&node=NAME&report-interval=MS&leaf=NAME]`.
 * @example parseZookeeperSpec('zookeeper:zk1:2181,zk2:2181/ids?reclaim-after=86400')
 */
export function parseZookeeperSpec(spec: string): ZookeeperSpec {
  const m = /^zookeeper:([^/?]+)(\/[^?]*)?(?:\?(.*))?$/.exec(spec.trim());
  const bad = (why: string) =>
    new InvalidArgumentError(
      `worker id provider ${JSON.stringify(spec)}: ${why}; expected zookeeper:HOST:PORT[,HOST:PORT…][/ROOT][?reclaim-after=SECONDS&node=NAME&leaf=NAME]`,
    );
  if (!m) throw bad('malformed');
  const hosts = (m[1] as string).split(',');
  if (!hosts.every((h) => HOST_PORT.test(h))) throw bad('each server must be HOST:PORT');
  let root = m[2] ?? DEFAULT_ZOOKEEPER_ROOT;
  if (root.length > 1 && root.endsWith('/')) root = root.slice(0, -1);
  if (root === '/' || !/^(\/[A-Za-z0-9._-]+)+$/.test(root) || root.split('/').some((p) => p === '.' || p === '..'))
    throw bad('the root must be a path like /sequoia/snowflake');
  let reclaimAfterMs: number | undefined;
  let identity: string | undefined;
  let reportIntervalMs: number | undefined;
  let leafName: string | undefined;
  for (const [k, v] of new URLSearchParams(m[3] ?? '')) {
    if (k === 'reclaim-after') {
      if (!/^[0-9]{1,9}$/.test(v) || Number(v) < 2) throw bad('reclaim-after must be whole seconds, at least 2');
      reclaimAfterMs = Number(v) * 1000;
    } else if (k === 'report-interval') {
      if (!/^[0-9]{3,6}$/.test(v)) throw bad('report-interval must be whole ms from 100');
      reportIntervalMs = Number(v);
    } else if (k === 'node') {
      if (!IDENTITY.test(v)) throw bad('node must be 1–200 of A-Z a-z 0-9 . _ : @ ~ -');
      identity = v;
    } else if (k === 'leaf') {
      // `.` and `..` are no ZooKeeper path component (the tree is /snowflake/NAME).
      if (!/^[A-Za-z0-9._]{1,100}$/.test(v) || /^\.\.?$/.test(v)) throw bad("leaf must be Leaf's leaf.name: 1–100 of A-Z a-z 0-9 . _");
      leafName = v;
    } else throw bad(`unknown option ${k}`);
  }
  if (leafName !== undefined) {
    // Leaf's tree is fixed, and Leaf never gives an id up: taking a silent node's id would hand a Leaf server's id to Sequoia.
    if (m[2] !== undefined) throw bad("with leaf=NAME the tree is Leaf's /snowflake/NAME: give no /ROOT");
    if (reclaimAfterMs !== undefined) throw bad('leaf=NAME never reclaims ids (a Leaf server keeps its node for good): drop reclaim-after');
    if (identity !== undefined && !LEAF_IDENTITY.test(identity))
      throw bad('with leaf=NAME, node must be IP:PORT as Leaf names its nodes (no -)');
    return { connect: hosts.join(','), root: `/snowflake/${leafName}`, reclaimAfterMs, identity, reportIntervalMs, leafName };
  }
  return { connect: hosts.join(','), root, reclaimAfterMs, identity, reportIntervalMs };
}

/** `${hostname}:${port}@${first 8 hex of sha256(absolute state dir)}`. */
export function defaultIdentity(host: string, port: number, stateDir: string): string {
  const h = createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 8);
  return `${host.replace(/[^A-Za-z0-9._-]/g, '_')}:${port}@${h}`;
}
