/** ColumnMaxReader on MySQL/MariaDB: `SELECT CAST(MAX(col) AS CHAR) FROM table` (text, so no BIGINT becomes a lossy number). */
import mysql from 'mysql2/promise';
import type { ColumnMaxReader } from '../../ports/column-max.js';
import { sqlIdentifier } from '../kit/sql/sql-identifier.js';
import { storeError, storeTarget } from '../kit/connection/store-boundary.js';

export class MysqlColumnMax implements ColumnMaxReader {
  private connection: Promise<mysql.Connection> | undefined;
  readonly target: string | undefined;

  constructor(private readonly uri: string) {
    this.target = storeTarget(uri, 3306);
  }

  async readMax(table: string, column: string): Promise<bigint | undefined> {
    const t = sqlIdentifier(table, '--table', '`', true);
    const c = sqlIdentifier(column, '--column', '`', false);
    try {
      this.connection ??= mysql.createConnection({ uri: this.uri, connectTimeout: 3000, supportBigNumbers: true, bigNumberStrings: true });
      const conn = await this.connection;
      const [rows] = await conn.query<mysql.RowDataPacket[]>(`SELECT CAST(MAX(${c}) AS CHAR) AS m FROM ${t}`);
      const m = (rows[0]?.m as string | null | undefined) ?? null;
      return m === null ? undefined : BigInt(m);
    } catch (e) {
      throw storeError('MySQL', e, this.target);
    }
  }

  async close(): Promise<void> {
    const c = this.connection;
    if (c) await (await c.catch(() => undefined))?.end().catch(() => {});
  }
}
