/** IDs read from a business database for `sequoia audit`: a query's first column, streamed. */
export interface IdSource {
  /**
   * Runs the query and calls `onBatch` with each batch of values of its first
   * column, as decimal text (null: a NULL); when the source was opened with a
   * time column, `times` holds each row's value of it in ms since 1970 (null:
   * a NULL), in the same order.
   */
  stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void>;
  /**
   * Where the database can send it, the query's rows as text in PostgreSQL's
   * COPY text format (one row a line, columns separated by tabs, NULL as
   * `\N`), handed over in chunks as they arrive: no value per row is made
   * before the caller parses the bytes. `onChunk` may throw to stop the read;
   * the promise then rejects with that error.
   */
  streamText?(onChunk: (chunk: Uint8Array) => void): Promise<void>;
  close(): Promise<void>;
}
