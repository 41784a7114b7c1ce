/**
 * `sequoia audit --db postgres://…`: the query runs under a server-side
 * cursor in a read-only transaction and is fetched in batches, so the client
 * holds one batch at a time whatever the table's size.
 */
import pg from 'pg';
import type { IdSource } from '../../ports/id-source.js';
import { ID_BATCH, idText } from '../kit/id-batches.js';

export class PostgresIdSource implements IdSource {
  private readonly client: pg.Client;
  constructor(
    connectionString: string,
    private readonly query: string,
  ) {
    this.client = new pg.Client({ connectionString });
  }

  async stream(onBatch: (values: ReadonlyArray<string | null>) => void): Promise<void> {
    await this.client.connect();
    await this.client.query('BEGIN READ ONLY');
    try {
      await this.client.query(`DECLARE sequoia_audit NO SCROLL CURSOR FOR ${this.query}`);
      for (;;) {
        const r = await this.client.query({ text: `FETCH ${ID_BATCH} FROM sequoia_audit`, rowMode: 'array' });
        if (r.rows.length === 0) break;
        onBatch(r.rows.map((row: unknown[]) => idText(row[0])));
      }
    } finally {
      await this.client.query('ROLLBACK').catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}
