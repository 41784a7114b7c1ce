/**
 * Reads the largest value of an integer column of a user's table (the path off
 * AUTO_INCREMENT: a tag starts above it). Implemented per engine under src/adapters/.
 */
export interface ColumnMaxReader {
  /** MAX(column) of the table, or undefined when the table is empty. Throws STORE_UNAVAILABLE, INVALID_ARGUMENT. */
  readMax(table: string, column: string): Promise<bigint | undefined>;
  close(): Promise<void>;
}
