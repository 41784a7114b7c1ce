/**
 * `sequoia audit --db mysql://…`: the query's rows are streamed (mysql2's
 * row stream, paused while a batch is handed over), numbers as decimal text
 * so no ID above 2^53 is rounded.
 */
import mysql from 'mysql2';
import type { IdSource } from '../../ports/id-source.js';
import { IdBatcher } from '../kit/id-batches.js';

export class MysqlIdSource implements IdSource {
  private readonly conn: mysql.Connection;
  constructor(
    uri: string,
    private readonly query: string,
  ) {
    this.conn = mysql.createConnection({ uri, supportBigNumbers: true, bigNumberStrings: true, rowsAsArray: true });
  }

  stream(onBatch: (values: ReadonlyArray<string | null>) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const batches = new IdBatcher(onBatch);
      const q = this.conn.query(this.query);
      q.on('error', reject);
      q.on('result', (row: unknown) => {
        try {
          batches.push((row as unknown[])[0]);
        } catch (e) {
          reject(e);
          this.conn.destroy();
        }
      });
      q.on('end', () => {
        try {
          batches.flush();
          resolve();
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.conn.end(() => resolve()));
  }
}
