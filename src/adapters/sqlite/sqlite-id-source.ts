/** `sequoia audit --db sqlite:PATH`: the query's rows, iterated (never all in memory), opened read-only. */
import Database from 'better-sqlite3';
import type { IdSource } from '../../ports/id-source.js';

const BATCH = 20_000;

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
    let batch: Array<string | null> = [];
    for (const row of stmt.iterate() as Iterable<unknown[]>) {
      const v = row[0];
      batch.push(v === null || v === undefined ? null : String(v));
      if (batch.length >= BATCH) {
        onBatch(batch);
        batch = [];
      }
    }
    if (batch.length > 0) onBatch(batch);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
