/**
 * uid-generator's WORKER_NODE on MySQL/MariaDB, written with the insert of
 * its WorkerNodeDAO.addWorkerNode (mapper WORKER_NODE.xml), MODIFIED and
 * CREATED from the database's NOW(); the ID is the connection's
 * LAST_INSERT_ID, as MyBatis's useGeneratedKeys reads it.
 */
import mysql from 'mysql2/promise';
import type { WorkerNodeRow } from '../../ports/worker-node-table.js';
import { MYSQL_WORKER_NODE_TABLE, SqlWorkerNodeTable } from '../kit/peer/worker-node-table.js';

/** uid-generator's WorkerNodeDAO.addWorkerNode insert, on the quoted table name. */
const INSERT = (t: string) => `INSERT INTO ${t} (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES (?, ?, ?, ?, NOW(), NOW())`;
const MYSQL = { name: 'mysql', backend: 'MySQL', defaultPort: 3306, quote: '`' } as const;

export class MysqlWorkerNodeTable extends SqlWorkerNodeTable {
  constructor(uri: string, table = MYSQL_WORKER_NODE_TABLE) {
    super(MYSQL, uri, table, INSERT);
  }

  protected async insert(row: WorkerNodeRow): Promise<string> {
    let c: mysql.Connection | undefined;
    try {
      c = await mysql.createConnection({ uri: this.url, connectTimeout: 3000, supportBigNumbers: true, bigNumberStrings: true });
      const [r] = await c.execute<mysql.ResultSetHeader>(this.sql, [row.hostName, row.port, row.type, row.launchDate]);
      return String(r.insertId);
    } finally {
      await c?.end().catch(() => {});
    }
  }

  protected tableMissing(e: unknown): boolean {
    return (e as { errno?: unknown }).errno === 1146;
  }
}
