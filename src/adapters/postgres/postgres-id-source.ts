/**
 * `sequoia audit --db postgres://…`, in a read-only transaction. The IDs
 * alone come as `COPY (query) TO STDOUT` text (streamText), received on a
 * thread of its own (copy-receiver.ts): the server sends the rows as bytes
 * the caller parses in place, and no row object is made. With a time column
 * the query runs under a server-side cursor fetched in batches (stream),
 * where the driver turns each time into a Date.
 */
import type pg from 'pg';
import type { IdSource } from '../../ports/id-source.js';
import { ID_BATCH, IdBatcher, idSourceError, timeColumnIndex } from '../kit/pk-bench/id-batches.js';
import { receiveCopy } from './copy-receiver.js';

export class PostgresIdSource implements IdSource {
  private client: pg.Client | undefined;
  constructor(
    private readonly connectionString: string,
    private readonly query: string,
    private readonly timeColumn?: string,
  ) {}

  /** The cursor's connection, on this thread: the COPY's is the receiver's, and this thread then loads no driver. */
  private async begin(): Promise<pg.Client> {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: this.connectionString });
    this.client = client;
    // A connection lost between two statements is also emitted here: the statement that waits on it fails with it.
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('BEGIN READ ONLY');
    } catch (e) {
      throw idSourceError('PostgreSQL', e);
    }
    return client;
  }

  streamText(onChunk: (chunk: Uint8Array) => void): Promise<void> {
    return receiveCopy({ url: this.connectionString, query: this.query }, onChunk);
  }

  async stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void> {
    const client = await this.begin();
    try {
      await client.query(`DECLARE sequoia_audit NO SCROLL CURSOR FOR ${this.query}`);
      const batches = new IdBatcher(onBatch, this.timeColumn !== undefined);
      let at: number | undefined;
      for (;;) {
        const r = await client.query({ text: `FETCH ${ID_BATCH} FROM sequoia_audit`, rowMode: 'array' });
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
      await client.query('ROLLBACK').catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => undefined);
  }
}
