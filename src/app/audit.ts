/**
 * What `sequoia audit` needs from outside the command: a business database's
 * IDs (each engine's driver loaded only when the URL names it) and the
 * store's view of a tag.
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { IdSource } from '../ports/id-source.js';
import type { TagInfo } from '../ports/segment-store.js';
import { resolveConfig } from './config.js';
import { createStore, redactStoreUrl } from './stores.js';
import type { AuditLedger } from '../ports/audit-ledger.js';
import type { LedgerEntry } from '../ports/range-ledger.js';
import { describeLedgerEntry } from '../service/ledger-view.js';
import { withIdService } from './wiring.js';

export type { AuditLedger, AuditLedgerEntry } from '../ports/audit-ledger.js';

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
 * The range ledger of the configured store (`--store`, SEQUOIA_STORE, the
 * config file's store), or undefined when that store keeps none (a Leaf
 * table). The caller closes it.
 */
export async function openAuditLedger(opts: {
  store?: string | undefined;
  stateDir?: string | undefined;
}): Promise<(AuditLedger & { segmentRanges(tag: string): Promise<readonly LedgerEntry[]>; close(): Promise<void> }) | undefined> {
  const config = resolveConfig({ store: opts.store, stateDir: opts.stateDir }, process.env, undefined);
  const store = await createStore(config.store);
  try {
    await store.init();
  } catch (e) {
    await store.close();
    throw e;
  }
  const { rangesContaining, ledgerEntries } = store;
  if (!rangesContaining || !ledgerEntries) {
    await store.close();
    return undefined;
  }
  return {
    rangesContaining: async (tag, id) =>
      (await rangesContaining.call(store, tag, id)).map((entry) => ({ description: describeLedgerEntry(entry), entry })),
    // A fence's jump counts as covered: the operator declared those IDs possibly issued.
    segmentRanges: async (tag) => (await ledgerEntries.call(store, tag)).filter((e) => e.kind !== 'give-back'),
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
