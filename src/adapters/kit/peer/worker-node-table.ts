/** What the WORKER_NODE tables of each engine share. */
import { UnavailableError } from '../../../core/errors.js';
import type { WorkerNodeRow, WorkerNodeTable } from '../../../ports/worker-node-table.js';
import { sqlIdentifier } from '../sql/sql-identifier.js';
import { storeError, storeTarget } from '../connection/store-boundary.js';

/** uid-generator's table name (WORKER_NODE.sql). */
export const MYSQL_WORKER_NODE_TABLE = 'WORKER_NODE';
/** Unquoted `WORKER_NODE` in uid-generator's SQL folds to this name in PostgreSQL. */
export const POSTGRES_WORKER_NODE_TABLE = 'worker_node';

/** The table is never created: a new one would start at ID 1 and hand out ids Baidu's generators already hold. */
function workerNodeTableMissing(table: string, target: string | undefined): UnavailableError {
  return new UnavailableError(
    'STORE_UNAVAILABLE',
    `worker-node: table ${table} not found at ${target ?? 'the database'}; it must be uid-generator's own WORKER_NODE table (Sequoia never creates it: a new table would hand out ids uid-generator already gave), or fix ?table=`,
  );
}

/** An engine as a WORKER_NODE table names it. */
export interface WorkerNodeEngine {
  /** The kind's first word: `mysql`, `postgres`. */
  readonly name: string;
  /** Named in store errors: `MySQL`, `PostgreSQL`. */
  readonly backend: string;
  readonly defaultPort: number;
  readonly quote: '"' | '`';
}

/**
 * A WORKER_NODE table at a database URL: its name checked and quoted once,
 * and a failed insert in words, the missing table apart. The engine gives its
 * insert (on a connection of its own, one per start) and its "no such table".
 */
export abstract class SqlWorkerNodeTable implements WorkerNodeTable {
  readonly kind: string;
  /** host:port, database: named in errors. */
  private readonly target: string | undefined;
  /** The engine's insert, on the checked and quoted table name. */
  protected readonly sql: string;

  protected constructor(
    private readonly engine: WorkerNodeEngine,
    protected readonly url: string,
    private readonly table: string,
    insert: (quotedTable: string) => string,
  ) {
    this.kind = `${engine.name} ${table}`;
    this.target = storeTarget(url, engine.defaultPort);
    this.sql = insert(sqlIdentifier(table, 'worker-node table', engine.quote, true));
  }

  async addWorkerNode(row: WorkerNodeRow): Promise<string> {
    try {
      return await this.insert(row);
    } catch (e) {
      if (this.tableMissing(e)) throw workerNodeTableMissing(this.table, this.target);
      throw storeError(this.engine.backend, e, this.target);
    }
  }

  /** Inserts the row with `sql` on a connection opened for it and closed again; answers the generated ID. */
  protected abstract insert(row: WorkerNodeRow): Promise<string>;

  /** The engine's error for a table that does not exist. */
  protected abstract tableMissing(e: unknown): boolean;

  async close(): Promise<void> {}
}
