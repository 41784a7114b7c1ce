/** IDs read from a business database for `sequoia audit`: a query's first column, streamed. */
export interface IdSource {
  /**
   * Runs the query and calls `onBatch` with each batch of values of its first
   * column, as decimal text (null: a NULL); when the source was opened with a
   * time column, `times` holds each row's value of it in ms since 1970 (null:
   * a NULL), in the same order.
   */
  stream(onBatch: (values: ReadonlyArray<string | null>, times?: ReadonlyArray<number | null>) => void): Promise<void>;
  close(): Promise<void>;
}
