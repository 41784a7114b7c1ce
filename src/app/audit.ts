/**
 * What `sequoia audit` needs from outside the command: a business database's
 * IDs (each engine's driver loaded only when the URL names it) and the
 * store's view of a tag.
 */
import { InvalidArgumentError } from '../core/errors.js';
import { HoldingIndex } from '../core/snowflake/holding-index.js';
import type { AuditLedger } from '../ports/audit-ledger.js';
import type { IdSource } from '../ports/id-source.js';
import type { LeaseLedger } from '../ports/lease-ledger.js';
import type { TagInfo } from '../ports/segment-store.js';
import { resolveConfig } from './config.js';
import { openBackend, redactStoreUrl } from './stores.js';
import { withIdService } from './wiring.js';

export type { AuditLedger, AuditLedgerEntry } from '../ports/audit-ledger.js';
export type { LeaseHolding, LeaseLedger } from '../ports/lease-ledger.js';

export async function openIdSource(url: string, query: string): Promise<IdSource> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    const { SqliteIdSource } = await import('../adapters/sqlite/sqlite-id-source.js');
    return new SqliteIdSource(path, query);
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined && (scheme === 'postgres' || scheme === 'postgresql')) {
    const { PostgresIdSource } = await import('../adapters/postgres/postgres-id-source.js');
    return new PostgresIdSource(url, query);
  }
  if (parsed !== undefined && (scheme === 'mysql' || scheme === 'mariadb')) {
    parsed.protocol = 'mysql:';
    const { MysqlIdSource } = await import('../adapters/mysql/mysql-id-source.js');
    return new MysqlIdSource(parsed.toString(), query);
  }
  throw new InvalidArgumentError(`--db: unsupported or malformed URL ${JSON.stringify(redactStoreUrl(url))} (use postgres://…, mysql://… or sqlite:PATH)`);
}

/** The tag as the store has it now (its max_id is where the next range starts). */
export async function storeTag(opts: { store?: string | undefined; stateDir?: string | undefined }, tag: string): Promise<TagInfo> {
  const config = resolveConfig({ store: opts.store, stateDir: opts.stateDir }, process.env, undefined);
  return withIdService(config, (s) => s.getTag(tag));
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
  const config = resolveConfig({ store }, process.env, undefined);
  const backend = await openBackend(config.store);
  try {
    const leases = backend.leases();
    if (!leases) {
      throw new InvalidArgumentError(`--store: ${JSON.stringify(redactStoreUrl(config.store))} keeps no worker-id leases (the lease ledger is on sqlite, postgres or mysql stores)`);
    }
    try {
      await leases.init();
      return await fn(leases);
    } finally {
      await leases.close();
    }
  } finally {
    await backend.segments.close();
  }
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
