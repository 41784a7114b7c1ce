/** `sequoia audit --db sqlite:PATH`: the query's rows, iterated (never all in memory), opened read-only. */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { InvalidArgumentError } from '../../core/errors.js';
import type { IdSource } from '../../ports/id-source.js';
import { IdBatcher, idSourceError, timeColumnIndex } from '../kit/pk-bench/id-batches.js';

export class SqliteIdSource implements IdSource {
  private readonly db: Database.Database;
  constructor(
    path: string,
    private readonly query: string,
    private readonly timeColumn?: string,
  ) {
    let isFile: boolean;
    try {
      isFile = statSync(path).isFile();
    } catch {
      throw new InvalidArgumentError(`--db: no SQLite file at ${JSON.stringify(path)}`);
    }
    if (!isFile) throw new InvalidArgumentError(`--db: ${JSON.stringify(path)} is not a file (a SQLite database is one file)`);
    try {
      this.db = new Database(path, { readonly: true, fileMustExist: true });
    } catch (e) {
      throw idSourceError('SQLite', e);
    }
  }

  async stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void> {
    let stmt: Database.Statement;
    try {
      stmt = this.db.prepare(this.query).raw(true).safeIntegers(true);
    } catch (e) {
      throw idSourceError('SQLite', e);
    }
    const at =
      this.timeColumn === undefined
        ? undefined
        : timeColumnIndex(
            this.timeColumn,
            stmt.columns().map((c) => c.name),
          );
    const batches = new IdBatcher(onBatch, at !== undefined);
    try {
      for (const row of stmt.iterate() as Iterable<unknown[]>) batches.push(row[0], at === undefined ? undefined : row[at]);
    } catch (e) {
      throw idSourceError('SQLite', e);
    }
    batches.flush();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
