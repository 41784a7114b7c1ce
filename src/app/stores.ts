/**
 * Turns a store URL into the stores a server needs. One place knows every scheme:
 *   sqlite:PATH (or sqlite::memory:), memory:,
 *   postgres://… or postgresql://…   (option: ?table=NAME, default sequoia_alloc)
 *   mysql://…                        (option: ?table=NAME; MySQL 8 or MariaDB 10.11+)
 *   either SQL URL with ?schema=leaf  Leaf's own table, allocating as Leaf does
 *                                    (options: ?table=NAME default leaf_alloc,
 *                                    ?side=NAME default sequoia_leaf_state: Sequoia's per-tag state)
 *   either SQL URL with ?schema=tinyid  Tinyid's own table, allocating as Tinyid does
 *                                    (options: ?table=NAME default tiny_id_info,
 *                                    ?side=NAME default sequoia_tinyid_state)
 *   redis://… or rediss://…          (options: ?keyPrefix=…&tagsKey=…&ledgerPrefix=…&leasePrefix=…)
 * and a comma-separated list of those for a multi-store HA set (store i, in
 * list order, hands out IDs ≡ i mod N; see multi-segment-store.ts). A comma
 * inside a password must be percent-encoded (%2C).
 *
 * The URL is parsed once. On PostgreSQL and MySQL the segment store and the
 * worker-id lease store share one pool; the lease store is made only when a
 * provider asks for it, so admin commands never open it. Each backend's
 * adapter (and driver) is loaded only when a URL names it.
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { SegmentStore } from '../ports/segment-store.js';
import type { WorkerLeaseStore } from '../ports/worker-lease-store.js';
import type { ServerIdentity } from '../ports/range-ledger.js';
import type { MysqlConnection } from '../adapters/mysql/mysql-connection.js';
import type { PostgresConnection } from '../adapters/postgres/postgres-connection.js';
import { processIdentity } from '../adapters/kit/segment/range-ledger.js';
import { sqliteLocation } from '../adapters/sqlite/sqlite-location.js';
import { VERSION } from '../version.js';

/** Who this process is in the range ledger: host, pid, an instance id fixed at start, the version. */
export const PROCESS_IDENTITY: ServerIdentity = processIdentity(VERSION);

const SUPPORTED = 'use sqlite:PATH, postgres://…, mysql://…, redis://…, memory:, or several of them separated by commas';

/** Removes credentials from a store URL (or a comma-separated list) for logs and status pages. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^@/,]*)@/g, (_m, cred: string) => (cred.includes(':') ? `//${cred.split(':')[0]}:***@` : `//${cred}@`));
}

/** The stores of one configured URL. */
export interface Backend {
  readonly segments: SegmentStore;
  /**
   * The worker-id lease store on the same backend (a multi-store list: its
   * first entry), made on the first call and the same object after. The
   * caller closes it.
   */
  leases(): WorkerLeaseStore | undefined;
}

interface Entry {
  readonly segments: SegmentStore;
  readonly leases: (() => WorkerLeaseStore) | undefined;
}

/**
 * `offLoop` (a server): SQLite files run in a worker thread (off-loop.ts), so
 * the event loop never waits on their locks or fsyncs.
 */
export async function openBackend(
  url: string,
  options: { readonly offLoop?: boolean; readonly identity?: ServerIdentity } = {},
): Promise<Backend> {
  const parts = url.split(',').map((p) => p.trim());
  if (parts.length > 1 && parts.some((p) => p === '')) {
    throw new InvalidArgumentError(`store: empty entry in the store list ${JSON.stringify(redactStoreUrl(url))}`);
  }
  const identity = options.identity ?? PROCESS_IDENTITY;
  const entries = await Promise.all(parts.map((p) => openEntry(p, options.offLoop ?? false, identity)));
  const segments =
    entries.length > 1
      ? new (await import('../adapters/multi/multi-segment-store.js')).MultiSegmentStore(entries.map((e) => e.segments))
      : (entries[0] as Entry).segments;
  const make = entries.find((e) => e.leases !== undefined)?.leases;
  let leases: WorkerLeaseStore | undefined;
  return { segments, leases: () => (leases ??= make?.()) };
}

/** The segment store of a URL (or list), for callers that need no leases. */
export async function createStore(url: string): Promise<SegmentStore> {
  return (await openBackend(url)).segments;
}

/**
 * What a state dir is bound to (StateDir.bindStore): the store's place without
 * credentials or driver options. A SQLite file is named by its absolute path.
 */
export function storeIdentity(url: string): string {
  return url
    .split(',')
    .map((p) => p.trim())
    .map((u) => {
      if (u.startsWith('sqlite:')) {
        return sqliteLocation(sqlitePath(u));
      }
      try {
        const parsed = new URL(u);
        if (!parsed.host) return u;
        const keep = new URLSearchParams();
        for (const n of ['table', 'keyPrefix', 'tagsKey', 'ledgerPrefix', 'leasePrefix']) {
          const v = parsed.searchParams.get(n);
          if (v !== null) keep.set(n, v);
        }
        const q = keep.toString();
        const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : '';
        return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}${q ? `?${q}` : ''}`;
      } catch {
        return redactStoreUrl(u);
      }
    })
    .join(',');
}

function sqlitePath(u: string): string {
  return u.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
}

/** A business database's URL (`--db` of audit and bench pk) by engine, MySQL's under the driver's scheme. */
export type DatabaseUrl =
  { readonly engine: 'sqlite'; readonly path: string } | { readonly engine: 'postgres' | 'mysql'; readonly url: string };

export function databaseUrl(url: string): DatabaseUrl {
  if (url.startsWith('sqlite:')) return { engine: 'sqlite', path: sqlitePath(url) };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined && (scheme === 'postgres' || scheme === 'postgresql')) return { engine: 'postgres', url };
  if (parsed !== undefined && (scheme === 'mysql' || scheme === 'mariadb')) {
    parsed.protocol = 'mysql:';
    return { engine: 'mysql', url: parsed.toString() };
  }
  throw new InvalidArgumentError(
    `--db: unsupported or malformed URL ${JSON.stringify(redactStoreUrl(url))} (use postgres://…, mysql://… or sqlite:PATH)`,
  );
}

async function openEntry(u: string, offLoop: boolean, identity: ServerIdentity): Promise<Entry> {
  if (u === 'memory:') {
    const [{ MemorySegmentStore }, { MemoryWorkerLeaseStore }] = await Promise.all([
      import('../adapters/memory/memory-segment-store.js'),
      import('../adapters/memory/memory-worker-lease-store.js'),
    ]);
    return { segments: new MemorySegmentStore({ identity }), leases: () => new MemoryWorkerLeaseStore() };
  }
  if (u.startsWith('sqlite:')) {
    const path = sqlitePath(u);
    if (path === '') throw new InvalidArgumentError('store: sqlite URL needs a path, e.g. sqlite:./data/sequoia.db');
    if (offLoop && path !== ':memory:') {
      const remote = await (await import('./off-loop.js')).openSqliteOffLoop(path, identity);
      if (remote) return remote;
    }
    const [{ SqliteConnection }, { SqliteSegmentStore }, { SqliteWorkerLeaseStore }] = await Promise.all([
      import('../adapters/sqlite/sqlite-connection.js'),
      import('../adapters/sqlite/sqlite-segment-store.js'),
      import('../adapters/sqlite/sqlite-worker-lease-store.js'),
    ]);
    const connection = new SqliteConnection({ path });
    return { segments: new SqliteSegmentStore({ connection, identity }), leases: () => new SqliteWorkerLeaseStore(connection) };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(u)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') return openSql(u, identity, POSTGRES);
  if (scheme === 'mysql') return openSql(u, identity, MYSQL);
  if (scheme === 'redis' || scheme === 'rediss') {
    const { rest, options } = takeParams(u, ['keyPrefix', 'tagsKey', 'ledgerPrefix', 'leasePrefix']);
    const [{ RedisSegmentStore }, { RedisWorkerLeaseStore }] = await Promise.all([
      import('../adapters/redis/redis-segment-store.js'),
      import('../adapters/redis/redis-worker-lease-store.js'),
    ]);
    const segments = new RedisSegmentStore({
      url: rest,
      keyPrefix: options.keyPrefix,
      tagsKey: options.tagsKey,
      ledgerPrefix: options.ledgerPrefix,
      identity,
    });
    // A connection of its own, opened only when a provider asks for leases.
    return { segments, leases: () => new RedisWorkerLeaseStore({ url: rest, leasePrefix: options.leasePrefix }) };
  }
  throw new InvalidArgumentError(`store: unsupported URL ${JSON.stringify(redactStoreUrl(u))} (${SUPPORTED})`);
}

/** The tables of a Leaf or Tinyid schema: its own (`?table=`) and Sequoia's side table (`?side=`). */
interface PeerTables {
  readonly table: string | undefined;
  readonly sideTable: string | undefined;
}

/** The stores of one SQL engine, each adapter loaded only when a URL names the engine. */
interface SqlEngine<C> {
  connect(uri: string): Promise<C>;
  sequoia(connection: C, table: string | undefined, identity: ServerIdentity): Promise<SegmentStore>;
  leaf(connection: C, tables: PeerTables): Promise<SegmentStore>;
  tinyid(connection: C, tables: PeerTables): Promise<SegmentStore>;
  leases(): Promise<new (connection: C) => WorkerLeaseStore>;
}

const POSTGRES: SqlEngine<PostgresConnection> = {
  connect: async (uri) => new (await import('../adapters/postgres/postgres-connection.js')).PostgresConnection({ connectionString: uri }),
  sequoia: async (connection, table, identity) =>
    new (await import('../adapters/postgres/postgres-segment-store.js')).PostgresSegmentStore({ connection, table, identity }),
  leaf: async (connection, t) =>
    new (await import('../adapters/postgres/postgres-leaf-segment-store.js')).PostgresLeafSegmentStore({ connection, ...t }),
  tinyid: async (connection, t) =>
    new (await import('../adapters/postgres/postgres-tinyid-segment-store.js')).PostgresTinyidSegmentStore({ connection, ...t }),
  leases: async () => (await import('../adapters/postgres/postgres-worker-lease-store.js')).PostgresWorkerLeaseStore,
};

const MYSQL: SqlEngine<MysqlConnection> = {
  connect: async (uri) => new (await import('../adapters/mysql/mysql-connection.js')).MysqlConnection({ uri }),
  sequoia: async (connection, table, identity) =>
    new (await import('../adapters/mysql/mysql-segment-store.js')).MysqlSegmentStore({ connection, table, identity }),
  leaf: async (connection, t) =>
    new (await import('../adapters/mysql/mysql-leaf-segment-store.js')).MysqlLeafSegmentStore({ connection, ...t }),
  tinyid: async (connection, t) =>
    new (await import('../adapters/mysql/mysql-tinyid-segment-store.js')).MysqlTinyidSegmentStore({ connection, ...t }),
  leases: async () => (await import('../adapters/mysql/mysql-worker-lease-store.js')).MysqlWorkerLeaseStore,
};

/** A PostgreSQL or MySQL URL: one connection, shared by the segment store its schema names and the lease store. */
async function openSql<C>(u: string, identity: ServerIdentity, engine: SqlEngine<C>): Promise<Entry> {
  const { rest, options } = takeParams(u, ['table', 'schema', 'side']);
  const schema = schemaOf(options);
  const [connection, Leases] = await Promise.all([engine.connect(rest), engine.leases()]);
  const tables: PeerTables = { table: options.table, sideTable: options.side };
  const segments =
    schema === 'sequoia' ? await engine.sequoia(connection, options.table, identity) : await engine[schema](connection, tables);
  return { segments, leases: () => new Leases(connection) };
}

/**
 * `?schema=`: `sequoia` (default, Sequoia's own table), `leaf` (Leaf's
 * leaf_alloc) or `tinyid` (Tinyid's tiny_id_info). `?side=` names the side
 * table of the last two and only goes with them.
 */
function schemaOf(options: Record<string, string | undefined>): 'sequoia' | 'leaf' | 'tinyid' {
  const schema = options.schema ?? 'sequoia';
  if (schema !== 'sequoia' && schema !== 'leaf' && schema !== 'tinyid') {
    throw new InvalidArgumentError(`store: URL parameter schema must be sequoia, leaf or tinyid, not ${JSON.stringify(schema)}`);
  }
  if (schema === 'sequoia' && options.side !== undefined)
    throw new InvalidArgumentError('store: URL parameter side goes with schema=leaf or schema=tinyid');
  return schema;
}

/** Takes Sequoia's own query parameters off a URL, leaving the driver's. */
function takeParams(u: string, names: readonly string[]): { rest: string; options: Record<string, string | undefined> } {
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    throw new InvalidArgumentError(`store: malformed URL ${JSON.stringify(redactStoreUrl(u))}`);
  }
  const options: Record<string, string | undefined> = {};
  for (const n of names) {
    const v = parsed.searchParams.get(n);
    if (v !== null) {
      if (v === '') throw new InvalidArgumentError(`store: URL parameter ${n} must not be empty`);
      options[n] = v;
      parsed.searchParams.delete(n);
    }
  }
  return { rest: parsed.toString(), options };
}
