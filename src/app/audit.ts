/**
 * What `sequoia audit` needs from outside the command: a business database's
 * IDs (each engine's driver loaded only when the URL names it) and the
 * store's view of a tag.
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { IdSource } from '../ports/id-source.js';
import type { TagInfo } from '../ports/segment-store.js';
import { resolveConfig } from './config.js';
import { redactStoreUrl } from './stores.js';
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
