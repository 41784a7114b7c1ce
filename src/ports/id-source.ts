/** IDs read from a business database for `sequoia audit`: a query's first column, streamed. */
export interface IdSource {
  /** Runs the query and calls `onBatch` with each batch of values of its first column, as decimal text (null: a NULL). */
  stream(onBatch: (values: ReadonlyArray<string | null>) => void): Promise<void>;
  close(): Promise<void>;
}
