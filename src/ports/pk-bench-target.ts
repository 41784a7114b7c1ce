/**
 * A database `sequoia bench pk` measures: it creates a scratch schema (or
 * database, or file) that carries a marker naming the run, makes one table per
 * kind of primary key in it, inserts, reads its counters and sizes, and drops
 * only what it created. Implemented per engine under src/adapters/.
 */

/** How a key travels and is stored: the database's own sequence, a 64-bit integer, 16 bytes, or text. */
export type PkKeyType = 'sequence' | 'int64' | 'uuid' | 'text';

export interface PkKindSpec {
  /** `sequence`, `segment`, `snowflake`, `uuidv7`, `uuidv4`, `uuidv4-text`, `ulid`. */
  readonly name: string;
  readonly keyType: PkKeyType;
  /** For text keys: the fixed length of every key (36 for UUID text, 26 for ULID). */
  readonly textLength?: number;
}

export interface PkTableShape {
  /** Bytes of the payload column of every row. */
  readonly width: number;
  /** Secondary indexes, one per integer column k1..kN. */
  readonly indexes: number;
}

/**
 * One row: the key (absent for `sequence`: the database makes it), the values
 * of k1..kN, the payload. int64 keys are decimal strings, uuid keys 16 bytes,
 * text keys text.
 */
export interface PkRow {
  readonly key: string | Uint8Array | undefined;
  readonly ints: readonly number[];
  readonly payload: string;
}

/** Server-wide counters read before and after each measured slice; null where the engine has none. */
export interface PkCounters {
  /** Write-ahead/redo log position in bytes (PostgreSQL WAL LSN; InnoDB redo LSN; SQLite WAL bytes written). */
  readonly logBytes: number | null;
  /** B-tree page splits so far (InnoDB `index_page_splits`). */
  readonly pageSplits: number | null;
}

export interface PkTableSize {
  /** The table (for InnoDB, the clustered index holding the rows). */
  readonly tableBytes: number;
  /** Every other index (for PostgreSQL and SQLite this includes the primary key's index). */
  readonly indexBytes: number;
}

export interface PkTargetInfo {
  readonly engine: 'postgresql' | 'mysql' | 'sqlite';
  readonly version: string;
  /** Where the scratch objects live, as the user would name them (schema, database or file). */
  readonly scratch: string;
  /** The server settings that decide the result (buffer pool, shared_buffers, synchronous commit …). */
  readonly settings: Readonly<Record<string, string>>;
  /** Notes on what could not be measured (no privilege for a counter …). */
  readonly notes: readonly string[];
  /** Connections the target can use at once (SQLite: 1). */
  readonly maxConcurrency: number;
}

export interface PkBenchTarget {
  /**
   * Creates the scratch schema/database/file and its marker. Refuses
   * (INVALID_ARGUMENT) when an object of that name exists already, whoever
   * made it: the tool only ever works inside an object it has just created.
   */
  createScratch(): Promise<PkTargetInfo>;
  /** Makes the table of one kind inside the scratch object; answers the key's column type. */
  createTable(kind: PkKindSpec, shape: PkTableShape): Promise<string>;
  /** One INSERT statement of `rows` (on one connection of the pool). */
  insert(kind: PkKindSpec, rows: readonly PkRow[]): Promise<void>;
  counters(): Promise<PkCounters>;
  /** Table and index bytes of one kind's table after the run (statistics refreshed first where the engine needs it). */
  size(kind: PkKindSpec): Promise<PkTableSize>;
  /**
   * Drops the scratch object this target created, after checking its marker
   * names this run; drops nothing it cannot prove it made. A no-op before
   * createScratch and after a first drop. Restores any server setting it changed.
   */
  dropScratch(): Promise<void>;
  /**
   * Drops a scratch object left behind by an interrupted run (its marker
   * says `sequoia bench pk`); refuses an object without the marker.
   */
  dropLeftover(): Promise<string>;
  /** Closes the connections. */
  close(): Promise<void>;
}
