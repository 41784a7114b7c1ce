/**
 * `tag create … --above URL --table T --column C`: reads MAX(C) of the user's
 * table on PostgreSQL or MySQL/MariaDB, so a tag starts above the IDs
 * AUTO_INCREMENT (or anything else) already gave out.
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { ColumnMaxReader } from '../ports/column-max.js';
import { redactStoreUrl } from './stores.js';

export interface ColumnMaxRead {
  readonly max: bigint | undefined;
  /** host:port, database of the URL (no credentials), for the message. */
  readonly where: string;
}

export async function readColumnMax(url: string, table: string, column: string): Promise<ColumnMaxRead> {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  let reader: (ColumnMaxReader & { readonly target: string | undefined }) | undefined;
  if (scheme === 'postgres' || scheme === 'postgresql') {
    reader = new (await import('../adapters/postgres/postgres-column-max.js')).PostgresColumnMax(url);
  } else if (scheme === 'mysql') {
    reader = new (await import('../adapters/mysql/mysql-column-max.js')).MysqlColumnMax(url);
  }
  if (!reader)
    throw new InvalidArgumentError(`--above: unsupported URL ${JSON.stringify(redactStoreUrl(url))} (use postgres://… or mysql://…)`);
  try {
    return { max: await reader.readMax(table, column), where: reader.target ?? redactStoreUrl(url) };
  } finally {
    await reader.close();
  }
}
