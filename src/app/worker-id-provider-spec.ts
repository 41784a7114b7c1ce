/**
 * The worker-id-provider grammar, in one place: a spec (`--worker-id-provider`,
 * SEQUOIA_WORKER_ID_PROVIDER, `workerIdProvider` in the config file) is parsed
 * once into a typed value here, by the config check, the wiring and the CLI
 * alike. The grammar's text is WORKER_ID_PROVIDER_SPECS (`defaults.ts`), which
 * every help text and error quotes and docs/configuration.md explains form by
 * form; it is not restated here, so it cannot drift.
 */
import { InvalidArgumentError } from '../core/errors.js';
import { type ZookeeperSpec, parseZookeeperSpec } from '../adapters/zookeeper/zookeeper-spec.js';
import { type EtcdSpec, parseEtcdSpec } from '../adapters/etcd/etcd-spec.js';

import { sqlIdentifier } from '../adapters/kit/sql/sql-identifier.js';
import { MYSQL_WORKER_NODE_TABLE, POSTGRES_WORKER_NODE_TABLE } from '../adapters/kit/peer/worker-node-table.js';
import { WORKER_ID_PROVIDER_SPECS } from './defaults.js';

export { WORKER_ID_PROVIDER_SPECS };

export type WorkerIdProviderSpec =
  | { readonly kind: 'lease' }
  | { readonly kind: 'static'; readonly workerId: number }
  | { readonly kind: 'k8s-ordinal'; readonly offset: number }
  | { readonly kind: 'worker-node'; readonly table?: WorkerNodeTableSpec }
  | { readonly kind: 'zookeeper'; readonly zookeeper: ZookeeperSpec }
  | { readonly kind: 'etcd'; readonly etcd: EtcdSpec };

/** uid-generator's WORKER_NODE table: the database (its URL without `table`) and the table's name. */
export interface WorkerNodeTableSpec {
  readonly engine: 'mysql' | 'postgres';
  readonly url: string;
  readonly table: string;
}

/** Parses a spec; a spec outside the grammar is INVALID_ARGUMENT naming it and the grammar. */
export function parseWorkerIdProvider(spec: string): WorkerIdProviderSpec {
  const s = spec.trim();
  if (s.startsWith('zookeeper:')) return { kind: 'zookeeper', zookeeper: parseZookeeperSpec(s) };
  if (s.startsWith('etcd://')) return { kind: 'etcd', etcd: parseEtcdSpec(s) };
  if (s.startsWith('worker-node:') && s.includes('://'))
    return { kind: 'worker-node', table: parseWorkerNodeTable(s.slice('worker-node:'.length)) };
  const m = /^(lease|sql-lease|static|k8s-ordinal|worker-node)(?::([0-9]{1,9}))?$/.exec(s);
  if (!m) throw new InvalidArgumentError(`worker id provider must be ${WORKER_ID_PROVIDER_SPECS} (got ${JSON.stringify(spec)})`);
  const kind = m[1] as string;
  const arg = m[2] === undefined ? undefined : Number(m[2]);
  switch (kind) {
    case 'static':
      if (arg === undefined) throw new InvalidArgumentError('worker id provider static needs an id: static:N');
      return { kind: 'static', workerId: arg };
    case 'k8s-ordinal':
      return { kind: 'k8s-ordinal', offset: arg ?? 0 };
    default:
      if (arg !== undefined) throw new InvalidArgumentError(`worker id provider ${kind} takes no argument`);
      return kind === 'worker-node' ? { kind: 'worker-node' } : { kind: 'lease' };
  }
}

const WORKER_NODE_URL = 'worker-node:mysql://…/DB or worker-node:postgres://…/DB, optionally ?table=NAME';

function parseWorkerNodeTable(raw: string): WorkerNodeTableSpec {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new InvalidArgumentError(`worker id provider worker-node: the database must be a URL, ${WORKER_NODE_URL}`);
  }
  const scheme = u.protocol.replace(/:$/, '');
  const engine = scheme === 'mysql' ? 'mysql' : scheme === 'postgres' || scheme === 'postgresql' ? 'postgres' : undefined;
  if (engine === undefined)
    throw new InvalidArgumentError(`worker id provider worker-node: unsupported database ${scheme}: (${WORKER_NODE_URL})`);
  if (u.hostname === '')
    throw new InvalidArgumentError(`worker id provider worker-node: the database URL names no host (${WORKER_NODE_URL})`);
  const others = [...u.searchParams.keys()].filter((k) => k !== 'table');
  if (others.length > 0)
    throw new InvalidArgumentError(`worker id provider worker-node: unknown parameter ${others.join(', ')} (it takes only table=NAME)`);
  const table = u.searchParams.get('table') ?? (engine === 'mysql' ? MYSQL_WORKER_NODE_TABLE : POSTGRES_WORKER_NODE_TABLE);
  sqlIdentifier(table, 'worker id provider worker-node: table', engine === 'mysql' ? '`' : '"', true);
  u.search = '';
  return { engine, url: u.toString(), table };
}
