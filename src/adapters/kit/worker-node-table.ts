/** What the WORKER_NODE tables of each engine share. */
import { UnavailableError } from '../../core/errors.js';

/** uid-generator's table name (WORKER_NODE.sql). */
export const MYSQL_WORKER_NODE_TABLE = 'WORKER_NODE';
/** Unquoted `WORKER_NODE` in uid-generator's SQL folds to this name in PostgreSQL. */
export const POSTGRES_WORKER_NODE_TABLE = 'worker_node';

/** The table is never created: a new one would start at ID 1 and hand out ids Baidu's generators already hold. */
export function workerNodeTableMissing(table: string, target: string | undefined): UnavailableError {
  return new UnavailableError(
    'STORE_UNAVAILABLE',
    `worker-node: table ${table} not found at ${target ?? 'the database'}; it must be uid-generator's own WORKER_NODE table (Sequoia never creates it: a new table would hand out ids uid-generator already gave), or fix ?table=`,
  );
}
