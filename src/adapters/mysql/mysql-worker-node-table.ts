/**
 * uid-generator's WORKER_NODE on MySQL/MariaDB, written with the insert of
 * its WorkerNodeDAO.addWorkerNode (mapper WORKER_NODE.xml), MODIFIED and
 * CREATED from the database's NOW(); the ID is the connection's
 * LAST_INSERT_ID, as MyBatis's useGeneratedKeys reads it.
 */
import mysql from 'mysql2/promise';
import type { WorkerNodeRow, WorkerNodeTable } from '../../ports/worker-node-table.js';
import { sqlIdentifier } from '../kit/sql-identifier.js';
import { storeError, storeTarget } from '../kit/store-boundary.js';
import { MYSQL_WORKER_NODE_TABLE, workerNodeTableMissing } from '../kit/worker-node-table.js';

export class MysqlWorkerNodeTable implements WorkerNodeTable {
  readonly kind: string;
  private readonly target: string | undefined;
  private readonly sql: string;

  constructor(
    private readonly uri: string,
    private readonly table = MYSQL_WORKER_NODE_TABLE,
  ) {
    this.kind = `mysql ${table}`;
    this.target = storeTarget(uri, 3306);
    const t = sqlIdentifier(table, 'worker-node table', '`', true);
    this.sql = `INSERT INTO ${t} (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES (?, ?, ?, ?, NOW(), NOW())`;
  }

  async addWorkerNode(row: WorkerNodeRow): Promise<string> {
    let c: mysql.Connection | undefined;
    try {
      c = await mysql.createConnection({ uri: this.uri, connectTimeout: 3000, supportBigNumbers: true, bigNumberStrings: true });
      const [r] = await c.execute<mysql.ResultSetHeader>(this.sql, [row.hostName, row.port, row.type, row.launchDate]);
      return String(r.insertId);
    } catch (e) {
      if ((e as { errno?: unknown }).errno === 1146) {
        throw workerNodeTableMissing(this.table, this.target);
      }
      throw storeError('MySQL', e, this.target);
    } finally {
      await c?.end().catch(() => {});
    }
  }

  async close(): Promise<void> {}
}
