/** `sequoia audit --db sqlite:PATH`: the query's rows, iterated (never all in memory), opened read-only. */
import Database from 'better-sqlite3';
import type { IdSource } from '../../ports/id-source.js';
import { IdBatcher } from '../kit/id-batches.js';

export class SqliteIdSource implements IdSource {
  private readonly db: Database.Database;
  constructor(
    path: string,
    private readonly query: string,
  ) {
    this.db = new Database(path, { readonly: true, fileMustExist: true });
  }

  async stream(onBatch: (values: ReadonlyArray<string | null>) => void): Promise<void> {
    const stmt = this.db.prepare(this.query).raw(true).safeIntegers(true);
    const batches = new IdBatcher(onBatch);
    for (const row of stmt.iterate() as Iterable<unknown[]>) batches.push(row[0]);
    batches.flush();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
