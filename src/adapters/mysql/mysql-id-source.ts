/**
 * `sequoia audit --db mysql://…`: the query's rows are streamed (mysql2's
 * row stream), each row an array (no object keyed by column name), numbers
 * as decimal text so no ID above 2^53 is rounded. The stream also emits a
 * statement's OK packet (a CALL's closing status, a `DO 1`) as a
 * ResultSetHeader object: that is no row.
 */
import mysql from 'mysql2';
import type { IdSource } from '../../ports/id-source.js';
import { IdBatcher, idSourceError, timeColumnIndex } from '../kit/pk-bench/id-batches.js';

export class MysqlIdSource implements IdSource {
  private readonly conn: mysql.Connection;
  /** A connection failure is emitted on the connection, not only on the query: kept for the query's promise. */
  private failed: ((e: unknown) => void) | undefined;
  constructor(
    uri: string,
    private readonly query: string,
    private readonly timeColumn?: string,
  ) {
    this.conn = mysql.createConnection({ uri, supportBigNumbers: true, bigNumberStrings: true, rowsAsArray: true });
    this.conn.on('error', (e) => this.failed?.(e));
  }

  stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const fail = (e: unknown) => reject(idSourceError('MySQL', e));
      this.failed = fail;
      const batches = new IdBatcher(onBatch, this.timeColumn !== undefined);
      let at: number | undefined;
      const q = this.conn.query(this.query);
      q.on('error', fail);
      q.on('fields', (fields: Array<{ name: string }> | undefined) => {
        try {
          if (this.timeColumn !== undefined && fields !== undefined)
            at = timeColumnIndex(
              this.timeColumn,
              fields.map((f) => f.name),
            );
        } catch (e) {
          fail(e);
          this.conn.destroy();
        }
      });
      q.on('result', (row: unknown) => {
        if (!Array.isArray(row)) return;
        try {
          batches.push(row[0], at === undefined ? undefined : row[at]);
        } catch (e) {
          fail(e);
          this.conn.destroy();
        }
      });
      q.on('end', () => {
        try {
          batches.flush();
          resolve();
        } catch (e) {
          fail(e);
        }
      });
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.conn.end(() => resolve()));
  }
}
