/**
 * `sequoia audit --db postgres://…`, in a read-only transaction. The IDs
 * alone come as `COPY (query) TO STDOUT` text (streamText): the server sends
 * the rows as bytes the caller parses in place, read from the socket as the
 * caller consumes them, so the client holds a socket read at a time and no
 * row object. With a time column the query runs under a server-side cursor
 * fetched in batches (stream), where the driver turns each time into a Date.
 */
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { IdSource } from '../../ports/id-source.js';
import { ID_BATCH, IdBatcher, idSourceError, timeColumnIndex } from '../kit/pk-bench/id-batches.js';

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

  private async begin(): Promise<void> {
    try {
      await this.client.connect();
      await this.client.query('BEGIN READ ONLY');
    } catch (e) {
      throw idSourceError('PostgreSQL', e);
    }
  }

  async streamText(onChunk: (chunk: Uint8Array) => void): Promise<void> {
    await this.begin();
    let stopped: unknown;
    try {
      // COPY takes a query without its closing semicolon (a cursor's DECLARE took one); the newline ends a closing -- comment.
      const copy = this.client.query(copyTo(`COPY (${this.query.replace(/[\s;]+$/, '')}\n) TO STDOUT`));
      await new Promise<void>((resolve, reject) => {
        copy.on('data', (chunk: Buffer) => {
          if (stopped !== undefined) return;
          try {
            onChunk(chunk);
          } catch (e) {
            stopped = e;
            reject(e);
            // The server keeps sending until the COPY ends: ending the client while its query runs drops the
            // connection (pg's end() does so for an active query), which stops it; the client is not used again.
            void this.client.end().catch(() => undefined);
          }
        });
        copy.on('end', () => resolve());
        copy.on('error', reject);
      });
    } catch (e) {
      throw stopped !== undefined ? stopped : idSourceError('PostgreSQL', e);
    } finally {
      if (stopped === undefined) await this.client.query('ROLLBACK').catch(() => undefined);
    }
  }

  async stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void> {
    await this.begin();
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
