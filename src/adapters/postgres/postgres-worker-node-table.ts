/**
 * uid-generator's WORKER_NODE on PostgreSQL: the same columns and insert as
 * its WorkerNodeDAO.addWorkerNode, the ID from a BIGSERIAL (the equivalent of
 * AUTO_INCREMENT: ids only grow, none is handed out twice), read back with
 * RETURNING. The table is the one the PostgreSQL port of uid-generator uses;
 * docs/migrate.md gives its DDL.
 */
import pg from 'pg';
import type { WorkerNodeRow, WorkerNodeTable } from '../../ports/worker-node-table.js';
import { sqlIdentifier } from '../kit/sql-identifier.js';
import { storeError, storeTarget } from '../kit/store-boundary.js';
import { POSTGRES_WORKER_NODE_TABLE, workerNodeTableMissing } from '../kit/worker-node-table.js';

export class PostgresWorkerNodeTable implements WorkerNodeTable {
  readonly kind: string;
  private readonly target: string | undefined;
  private readonly sql: string;

  constructor(
    private readonly connectionString: string,
    private readonly table = POSTGRES_WORKER_NODE_TABLE,
  ) {
    this.kind = `postgres ${table}`;
    this.target = storeTarget(connectionString, 5432);
    const t = sqlIdentifier(table, 'worker-node table', '"', true);
    this.sql = `INSERT INTO ${t} (host_name, port, type, launch_date, modified, created) VALUES ($1, $2, $3, $4, NOW(), NOW()) RETURNING id::text AS id`;
  }

  async addWorkerNode(row: WorkerNodeRow): Promise<string> {
    const c = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 3000, statement_timeout: 30_000 });
    c.on('error', () => {});
    try {
      await c.connect();
      const r = await c.query<{ id: string }>(this.sql, [row.hostName, row.port, row.type, row.launchDate]);
      return (r.rows[0] as { id: string }).id;
    } catch (e) {
      if ((e as { code?: unknown }).code === '42P01') {
        throw workerNodeTableMissing(this.table, this.target);
      }
      throw storeError('PostgreSQL', e, this.target);
    } finally {
      await c.end().catch(() => {});
    }
  }

  async close(): Promise<void> {}
}
