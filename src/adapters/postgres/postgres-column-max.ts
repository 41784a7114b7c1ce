/** ColumnMaxReader on PostgreSQL: `SELECT MAX(col)::text FROM table` (text, so no BIGINT becomes a lossy number). */
import pg from 'pg';
import type { ColumnMaxReader } from '../../ports/column-max.js';
import { sqlIdentifier } from '../kit/sql/sql-identifier.js';
import { storeError, storeTarget } from '../kit/connection/store-boundary.js';

export class PostgresColumnMax implements ColumnMaxReader {
  private readonly client: pg.Client;
  private connected: Promise<void> | undefined;
  readonly target: string | undefined;

  constructor(connectionString: string) {
    this.target = storeTarget(connectionString, 5432);
    this.client = new pg.Client({ connectionString, connectionTimeoutMillis: 3000, statement_timeout: 30_000 });
    this.client.on('error', () => {});
  }

  async readMax(table: string, column: string): Promise<bigint | undefined> {
    const t = sqlIdentifier(table, '--table', '"', true);
    const c = sqlIdentifier(column, '--column', '"', false);
    try {
      this.connected ??= this.client.connect().then(() => undefined);
      await this.connected;
      const r = await this.client.query(`SELECT MAX(${c})::text AS m FROM ${t}`);
      const m = (r.rows[0] as { m: string | null } | undefined)?.m ?? null;
      return m === null ? undefined : BigInt(m);
    } catch (e) {
      throw storeError('PostgreSQL', e, this.target);
    }
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => {});
  }
}
