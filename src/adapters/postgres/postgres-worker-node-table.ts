/**
 * uid-generator's WORKER_NODE on PostgreSQL: the same columns and insert as
 * its WorkerNodeDAO.addWorkerNode, the ID from a BIGSERIAL (the equivalent of
 * AUTO_INCREMENT: ids only grow, none is handed out twice), read back with
 * RETURNING. The table is the one the PostgreSQL port of uid-generator uses;
 * docs/migrate.md gives its DDL.
 */
import pg from 'pg';
import type { WorkerNodeRow } from '../../ports/worker-node-table.js';
import { POSTGRES_WORKER_NODE_TABLE, SqlWorkerNodeTable } from '../kit/peer/worker-node-table.js';

/** uid-generator's WorkerNodeDAO.addWorkerNode insert, on the quoted table name. */
const INSERT = (t: string) =>
  `INSERT INTO ${t} (host_name, port, type, launch_date, modified, created) VALUES ($1, $2, $3, $4, NOW(), NOW()) RETURNING id::text AS id`;
const POSTGRES = { name: 'postgres', backend: 'PostgreSQL', defaultPort: 5432, quote: '"' } as const;

export class PostgresWorkerNodeTable extends SqlWorkerNodeTable {
  constructor(connectionString: string, table = POSTGRES_WORKER_NODE_TABLE) {
    super(POSTGRES, connectionString, table, INSERT);
  }

  protected async insert(row: WorkerNodeRow): Promise<string> {
    const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000, statement_timeout: 30_000 });
    c.on('error', () => {});
    try {
      await c.connect();
      const r = await c.query<{ id: string }>(this.sql, [row.hostName, row.port, row.type, row.launchDate]);
      return (r.rows[0] as { id: string }).id;
    } finally {
      await c.end().catch(() => {});
    }
  }

  protected tableMissing(e: unknown): boolean {
    return (e as { code?: unknown }).code === '42P01';
  }
}
