/**
 * What `sequoia audit` needs from outside the command: a business database's
 * IDs (each engine's driver loaded only when the URL names it) and the
 * store's view of a tag.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/errors.js';
import { HoldingIndex } from '../core/snowflake/holding-index.js';
import type { AuditLedger } from '../ports/audit-ledger.js';
import type { IdSource } from '../ports/id-source.js';
import type { LeaseHolding, LeaseLedger } from '../ports/lease-ledger.js';
import { fallbackHoldingSpan, fallbackLeaseSpace } from '../core/fallback/fallback-space.js';
import type { TagInfo } from '../ports/segment-store.js';
import { resolveConfig } from './config.js';
import { ledgerRootOf, parseZookeeperSpec } from '../adapters/zookeeper/zookeeper-spec.js';
import { parseEtcdSpec } from '../adapters/etcd/etcd-spec.js';
import { createStore, databaseUrl, openBackend, redactStoreUrl, storeIdentity } from './stores.js';
import { StateDirReader } from '../adapters/state-dir/state-dir.js';
import type { ServerMark } from '../service/audit/audit-report.js';
import type { LedgerEntry } from '../ports/range-ledger.js';
import { describeLedgerEntry } from '../service/ledger-view.js';
import { withIdService } from './wiring.js';
import { importEtcdLeaseStore } from './etcd-leases.js';

export type { AuditLedger, AuditLedgerEntry } from '../ports/audit-ledger.js';
export type { LeaseHolding, LeaseLedger } from '../ports/lease-ledger.js';

/** `timeColumn`: a column of the query (name, or 1-based number) whose rows' times come with the IDs. */
export async function openIdSource(url: string, query: string, timeColumn?: string): Promise<IdSource> {
  const db = databaseUrl(url);
  switch (db.engine) {
    case 'sqlite': {
      const { SqliteIdSource } = await import('../adapters/sqlite/sqlite-id-source.js');
      return new SqliteIdSource(db.path, query, timeColumn);
    }
    case 'postgres': {
      const { PostgresIdSource } = await import('../adapters/postgres/postgres-id-source.js');
      return new PostgresIdSource(db.url, query, timeColumn);
    }
    case 'mysql': {
      const { MysqlIdSource } = await import('../adapters/mysql/mysql-id-source.js');
      return new MysqlIdSource(db.url, query, timeColumn);
    }
  }
}

/** The tag as the store has it now (its max_id is where the next range starts). */
export async function storeTag(opts: { store?: string | undefined }, tag: string): Promise<TagInfo> {
  // No state dir: reading a tag takes no range, and opening one would create it (./data by default).
  const config = resolveConfig({ store: opts.store }, process.env, undefined);
  return withIdService({ ...config, stateDir: null }, (s) => s.getTag(tag));
}

/**
 * The marks of `tag` in each server state dir given to audit, read without
 * writing (a running server's included). A dir that holds no state, or that
 * belongs to another store, is refused: its marks would say nothing of this one.
 */
export function serverMarks(stateDirs: readonly string[], store: string | undefined, tag: string): ServerMark[] {
  const identity = storeIdentity(resolveConfig({ store }, process.env, undefined).store);
  return stateDirs.map((dir) => {
    if (!existsSync(join(dir, 'state.db')))
      throw new InvalidArgumentError(
        `--state-dir: ${JSON.stringify(dir)} holds no server state (no state.db): not a server's state directory`,
      );
    let reader: StateDirReader;
    try {
      reader = new StateDirReader(dir);
    } catch {
      throw new InvalidArgumentError(`--state-dir: the state in ${JSON.stringify(dir)} cannot be read`);
    }
    try {
      let bound: string | undefined;
      try {
        bound = reader.boundStore();
      } catch {
        throw new InvalidArgumentError(`--state-dir: the state in ${JSON.stringify(dir)} cannot be read`);
      }
      if (bound !== undefined && bound !== identity)
        throw new InvalidArgumentError(
          `--state-dir: ${JSON.stringify(dir)} belongs to store ${bound}, not to ${identity}: its marks describe that store`,
        );
      const mark = reader.get(tag);
      if (mark === undefined)
        throw new InvalidArgumentError(`--state-dir: the marks in ${JSON.stringify(dir)} cannot be read now; try again`);
      return { stateDir: dir, mark };
    } finally {
      reader.close();
    }
  });
}

/** The configured custom layouts (`--config` / SEQUOIA_CONFIG), for `--layout NAME`. */
export function configuredLayouts(file: string | undefined): unknown {
  return resolveConfig({}, process.env, file).layouts;
}

/**
 * The worker-id lease ledger of a store (`--store`, else SEQUOIA_STORE, else
 * the default), for `explain` and `audit`; closed after `fn`.
 */
export async function withLeaseLedger<T>(store: string | undefined, fn: (ledger: LeaseLedger) => Promise<T>): Promise<T> {
  const zk = zookeeperLedgerSpec(store ?? process.env.SEQUOIA_STORE);
  if (zk) {
    const { ZookeeperLeaseLedger } = await import('../adapters/zookeeper/zookeeper-lease-ledger.js');
    const ledger = new ZookeeperLeaseLedger(zk.connect, zk.root);
    try {
      return await fn(ledger);
    } finally {
      await ledger.close();
    }
  }
  const etcd = store ?? process.env.SEQUOIA_STORE;
  if (etcd?.startsWith('etcd://')) {
    // The etcd provider's ledger, under the spec's prefix (the --worker-id-provider value as given).
    const { EtcdWorkerLeaseStore } = await importEtcdLeaseStore();
    const ledger = new EtcdWorkerLeaseStore(parseEtcdSpec(etcd));
    try {
      return await fn(ledger);
    } finally {
      await ledger.close();
    }
  }
  return withLeases(resolveConfig({ store }, process.env, undefined).store, (ledger, url) => {
    if (!ledger) {
      throw new InvalidArgumentError(
        `--store: ${JSON.stringify(redactStoreUrl(url))} keeps no worker-id leases (the lease ledger is on sqlite, postgres or mysql stores, or in ZooKeeper: zookeeper://HOST:PORT/ROOT, zookeeper://HOST:PORT?leaf=NAME, or etcd: etcd://HOST:PORT/PREFIX)`,
      );
    }
    return fn(ledger);
  });
}

/**
 * `zookeeper://HOST:PORT[,…][/ROOT]` or `zookeeper://HOST:PORT[,…]?leaf=NAME`
 * (or the provider's own `zookeeper:HOST:PORT…` spec, as given to
 * --worker-id-provider): the ledger the zookeeper provider keeps in its tree,
 * or the leaf=NAME provider beside Leaf's. Undefined for any other store.
 */
function zookeeperLedgerSpec(store: string | undefined): { connect: string; root: string } | undefined {
  if (store === undefined || !store.startsWith('zookeeper:')) return undefined;
  const spec = parseZookeeperSpec(store.replace(/^zookeeper:\/\//, 'zookeeper:'));
  return { connect: spec.connect, root: ledgerRootOf(spec) };
}

async function withLeases<T>(url: string, fn: (ledger: LeaseLedger | undefined, url: string) => Promise<T>): Promise<T> {
  const backend = await openBackend(url);
  try {
    const leases = backend.leases();
    if (!leases) return await fn(undefined, url);
    try {
      await leases.init();
      return await fn(leases, url);
    } finally {
      await leases.close();
    }
  } finally {
    await backend.segments.close();
  }
}

/** Who held a fallback worker id of a tag: the holdings' spans, and the holders of a worker id at a millisecond. */
export interface FallbackLeaseView {
  readonly index: HoldingIndex;
  holders(workerId: number, ms: number): readonly LeaseHolding[];
}

/**
 * The fallback worker-id leases of `tag` in the configured store's lease
 * ledger, with the lease length the servers use (fallbackLeaseTtlMs: flag,
 * environment or config file, as for serve); undefined when the store keeps
 * no leases (such a store cannot give fallback leases either).
 */
export async function fallbackLeases(
  opts: { store?: string | undefined; fallbackLeaseTtlMs?: string | undefined; config?: string | undefined },
  tag: string,
): Promise<FallbackLeaseView | undefined> {
  const config = resolveConfig({ store: opts.store, fallbackLeaseTtlMs: opts.fallbackLeaseTtlMs }, process.env, opts.config);
  const holdings = await withLeases(config.store, async (ledger) => ledger?.holdings(fallbackLeaseSpace(tag)));
  if (holdings === undefined) return undefined;
  const spans = holdings.map((h) => ({ h, span: fallbackHoldingSpan(h, config.fallbackLeaseTtlMs) }));
  return {
    index: new HoldingIndex(spans.map((s) => s.span)),
    holders: (workerId, ms) =>
      spans.filter((s) => s.span.workerId === workerId && s.span.fromTick <= ms && ms <= s.span.untilTick).map((s) => s.h),
  };
}

/**
 * AuditLedger's `leaseHeld` from a lease ledger: each space's holdings are
 * read once and answered from memory (an audit asks for every ID).
 */
export function leaseHeldFrom(ledger: LeaseLedger): NonNullable<AuditLedger['leaseHeld']> {
  const indexes = new Map<string, Promise<HoldingIndex>>();
  return async (spaceKey, workerId, tick) => {
    let ix = indexes.get(spaceKey);
    if (!ix) indexes.set(spaceKey, (ix = ledger.holdings(spaceKey).then((h) => new HoldingIndex(h))));
    return (await ix).held(workerId, tick);
  };
}

/** Ledger entries read at once by `sequoia audit`: its memory for the ledger is one page and the ranges it coalesces them into. */
const LEDGER_PAGE = 5000;

/**
 * The range ledger of the configured store (`--store`, SEQUOIA_STORE, the
 * config file's store), or undefined when that store keeps none (a Leaf or
 * Tinyid table). The caller closes it.
 */
export async function openAuditLedger(opts: {
  store?: string | undefined;
}): Promise<(AuditLedger & { segmentRangePages(tag: string): AsyncIterable<readonly LedgerEntry[]>; close(): Promise<void> }) | undefined> {
  const config = resolveConfig({ store: opts.store }, process.env, undefined);
  const store = await createStore(config.store);
  try {
    await store.init();
  } catch (e) {
    await store.close();
    throw e;
  }
  const { rangesContaining, ledgerPage } = store;
  if (!rangesContaining || !ledgerPage) {
    await store.close();
    return undefined;
  }
  return {
    rangesContaining: async (tag, id) =>
      (await rangesContaining.call(store, tag, id)).map((entry) => ({ description: describeLedgerEntry(entry), entry })),
    segmentRangePages: async function* (tag) {
      let cursor: string | undefined;
      do {
        const page = await ledgerPage.call(store, tag, cursor, LEDGER_PAGE);
        // A fence's jump counts as covered: the operator declared those IDs possibly issued.
        yield page.entries.filter((e) => e.kind !== 'give-back');
        cursor = page.next;
      } while (cursor !== undefined);
    },
    close: () => store.close(),
  };
}

/** Every ledger entry of `tag` holding `id`, with the store's view of the tag: what `sequoia explain --tag` prints. */
export async function traceSegmentId(
  opts: { store?: string | undefined; stateDir?: string | undefined },
  tag: string,
  id: bigint,
): Promise<{ entries: readonly LedgerEntry[] | undefined; info: TagInfo | undefined }> {
  const config = resolveConfig({ store: opts.store, stateDir: opts.stateDir }, process.env, undefined);
  const store = await createStore(config.store);
  try {
    await store.init();
    const info = await store.getTag(tag);
    const entries = store.rangesContaining ? await store.rangesContaining(tag, id) : undefined;
    return { entries, info };
  } finally {
    await store.close();
  }
}
