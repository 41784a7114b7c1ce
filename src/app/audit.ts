/**
 * What `sequoia audit` needs from outside the command: a business database's
 * IDs (each engine's driver loaded only when the URL names it) and the
 * store's view of a tag.
 */
import type { IdSource } from '../ports/id-source.js';
import type { TagInfo } from '../ports/segment-store.js';
import { resolveConfig } from './config.js';
import { databaseUrl } from './stores.js';
import { withIdService } from './wiring.js';

export type { AuditLedger, AuditLedgerEntry } from '../ports/audit-ledger.js';

export async function openIdSource(url: string, query: string): Promise<IdSource> {
  const db = databaseUrl(url);
  switch (db.engine) {
    case 'sqlite': {
      const { SqliteIdSource } = await import('../adapters/sqlite/sqlite-id-source.js');
      return new SqliteIdSource(db.path, query);
    }
    case 'postgres': {
      const { PostgresIdSource } = await import('../adapters/postgres/postgres-id-source.js');
      return new PostgresIdSource(db.url, query);
    }
    case 'mysql': {
      const { MysqlIdSource } = await import('../adapters/mysql/mysql-id-source.js');
      return new MysqlIdSource(db.url, query);
    }
  }
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
