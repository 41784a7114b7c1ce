/**
 * `sequoia audit --db postgres://…`: the query runs under a server-side
 * cursor in a read-only transaction and is fetched in batches, so the client
 * holds one batch at a time whatever the table's size.
 */
import pg from 'pg';
import type { IdSource } from '../../ports/id-source.js';
import { ID_BATCH, IdBatcher, idSourceError, timeColumnIndex } from '../kit/id-batches.js';

export class PostgresIdSource implements IdSource {
  private readonly client: pg.Client;
  constructor(
    connectionString: string,
    private readonly query: string,
    private readonly timeColumn?: string,
  ) {
    this.client = new pg.Client({ connectionString });
    // A connection lost between two statements is also emitted here: the statement that waits on it fails with it.
    this.client.on('error', () => undefined);
  }

  async stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void> {
    try {
      await this.client.connect();
      await this.client.query('BEGIN READ ONLY');
    } catch (e) {
      throw idSourceError('PostgreSQL', e);
    }
    try {
      await this.client.query(`DECLARE sequoia_audit NO SCROLL CURSOR FOR ${this.query}`);
      const batches = new IdBatcher(onBatch, this.timeColumn !== undefined);
      let at: number | undefined;
      for (;;) {
        const r = await this.client.query({ text: `FETCH ${ID_BATCH} FROM sequoia_audit`, rowMode: 'array' });
        if (this.timeColumn !== undefined && at === undefined)
          at = timeColumnIndex(
            this.timeColumn,
            r.fields.map((f) => f.name),
          );
        if (r.rows.length === 0) break;
        for (const row of r.rows as unknown[][]) batches.push(row[0], at === undefined ? undefined : row[at]);
        batches.flush();
      }
    } catch (e) {
      throw idSourceError('PostgreSQL', e);
    } finally {
      await this.client.query('ROLLBACK').catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}
