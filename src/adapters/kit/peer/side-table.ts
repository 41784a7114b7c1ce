/**
 * Sequoia's side table beside a foreign-schema store (Leaf's `leaf_alloc`,
 * Tinyid's `tiny_id_info`): what Sequoia keeps per tag that the foreign
 * table has no column for, so that table gains nothing. One row per (foreign
 * table, tag): the fence epoch, the generation and, where the foreign table
 * has none, the description. A tag whose foreign row the other system's
 * admins made has no side row: fence epoch 0, generation LEGACY_GENERATION.
 * A side row outlives its tag's deletion, as a fence epoch must.
 *
 * Its statements are written here once per SQL dialect; each store runs them
 * on its own transaction's connection, beside its own statements on the
 * foreign table (whose row lock, taken first, serialises them).
 */
import { InvalidArgumentError, UnavailableError } from '../../../core/errors.js';
import { LEGACY_GENERATION, newGeneration, tableName } from '../segment/segment-rules.js';
import type { RunSql } from '../sql/sql-database.js';

export type SqlDialect = 'mysql' | 'postgres';

/** A tag's side state, as an allocation answers it and a give-back compares it. */
export interface SideState {
  readonly fenceEpoch: number;
  readonly generation: string;
}

/** What a foreign schema's side table is like (`LEAF_SCHEMA`, `TINYID_SCHEMA`). */
export interface ForeignSchema {
  /** The other system, for messages: `Leaf`, `Tinyid`. */
  readonly system: string;
  readonly defaultTable: string;
  readonly defaultSideTable: string;
  /** The key column that names the foreign table. */
  readonly keyColumn: string;
  /** The foreign table's column of the tag (`biz_tag`, `biz_type`). */
  readonly tagColumn: string;
  /** Whether the side table keeps the tag's description (the foreign table has no column for it). */
  readonly describes: boolean;
}

/** The store options that name the two tables. */
export interface ForeignTableOptions {
  /** The other system's table; default the schema's (`leaf_alloc`, `tiny_id_info`). */
  readonly table?: string | undefined;
  /** Sequoia's side table; default the schema's (`sequoia_leaf_state`, `sequoia_tinyid_state`). */
  readonly sideTable?: string | undefined;
}

interface Statements {
  /** A row when the foreign table exists. Values: [foreign]. */
  readonly foreignExists: string;
  readonly create: string;
  /** Values: [foreign, tag]. */
  readonly read: string;
  /** Values: [foreign, tag, generation]. */
  readonly created: string;
  /** Values: [foreign, tag, generation]. */
  readonly deleted: string;
  /** Values: [foreign, tag]. */
  readonly fenced: string;
  /** Values: [foreign, tag, description]. */
  readonly described: string;
  /** The side row of the foreign row whose tag is `tag` (a column); the foreign table's name is the query's first value. */
  readonly joinOn: (tagColumn: string) => string;
  /** The side columns a joined SELECT reads. */
  readonly columns: string;
  /** A joined SELECT's condition on the tag (its second value). */
  readonly whereTag: (tagColumn: string) => string;
  /** Byte order of the tags, the order every store lists in. */
  readonly byteOrder: (tagColumn: string) => string;
}

interface Names {
  readonly side: string;
  readonly keyColumn: string;
  readonly describes: boolean;
}

function mysqlStatements({ side, keyColumn: k, describes }: Names): Statements {
  const bin = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL';
  return {
    foreignExists: 'SELECT 1 AS one FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
    // CREATE TABLE IF NOT EXISTS is atomic in InnoDB's data dictionary: concurrent starts are safe.
    create: `CREATE TABLE IF NOT EXISTS ${side} (
      ${k} VARCHAR(64) ${bin},
      tag VARCHAR(128) ${bin},
      fence_epoch INT NOT NULL DEFAULT 0,
      generation BIGINT NOT NULL DEFAULT 0,
      ${describes ? `description VARCHAR(1024) CHARACTER SET utf8mb4 NOT NULL DEFAULT '',` : ''}
      PRIMARY KEY (${k}, tag)
    ) ENGINE=InnoDB`,
    read: `SELECT fence_epoch, generation FROM ${side} WHERE ${k} = ? AND tag = ?`,
    created: `INSERT INTO ${side} (${k}, tag, fence_epoch, generation) VALUES (?, ?, 0, CAST(? AS SIGNED))
      ON DUPLICATE KEY UPDATE fence_epoch = 0, generation = VALUES(generation)`,
    deleted: `INSERT INTO ${side} (${k}, tag, fence_epoch, generation) VALUES (?, ?, 0, CAST(? AS SIGNED))
      ON DUPLICATE KEY UPDATE generation = VALUES(generation)`,
    fenced: `INSERT INTO ${side} (${k}, tag, fence_epoch, generation) VALUES (?, ?, 1, 0)
      ON DUPLICATE KEY UPDATE fence_epoch = fence_epoch + 1`,
    described: `INSERT INTO ${side} (${k}, tag, description) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE description = VALUES(description)`,
    // The foreign table's tags compare in its own collation (often case-insensitive); the side row's key is byte-exact.
    joinOn: (tag) => `LEFT JOIN ${side} s ON s.${k} = ? AND s.tag = CONVERT(${tag} USING utf8mb4) COLLATE utf8mb4_bin`,
    columns: `s.fence_epoch, s.generation${describes ? ', s.description' : ''}`,
    whereTag: (tag) => `WHERE ${tag} = ?`,
    byteOrder: (tag) => `ORDER BY CONVERT(${tag} USING utf8mb4) COLLATE utf8mb4_bin`,
  };
}

function postgresStatements({ side, keyColumn: k, describes }: Names): Statements {
  return {
    foreignExists: 'SELECT 1 AS one WHERE to_regclass($1) IS NOT NULL',
    create: `CREATE TABLE IF NOT EXISTS ${side} (
      ${k} TEXT NOT NULL,
      tag TEXT NOT NULL,
      fence_epoch INTEGER NOT NULL DEFAULT 0,
      generation BIGINT NOT NULL DEFAULT 0,
      ${describes ? `description TEXT NOT NULL DEFAULT '',` : ''}
      PRIMARY KEY (${k}, tag)
    )`,
    read: `SELECT fence_epoch, generation::text AS generation FROM ${side} WHERE ${k} = $1 AND tag = $2`,
    created: `INSERT INTO ${side} (${k}, tag, fence_epoch, generation) VALUES ($1, $2, 0, $3::bigint)
      ON CONFLICT (${k}, tag) DO UPDATE SET fence_epoch = 0, generation = EXCLUDED.generation`,
    deleted: `INSERT INTO ${side} (${k}, tag, fence_epoch, generation) VALUES ($1, $2, 0, $3::bigint)
      ON CONFLICT (${k}, tag) DO UPDATE SET generation = EXCLUDED.generation`,
    fenced: `INSERT INTO ${side} (${k}, tag, fence_epoch, generation) VALUES ($1, $2, 1, 0)
      ON CONFLICT (${k}, tag) DO UPDATE SET fence_epoch = ${side}.fence_epoch + 1`,
    described: `INSERT INTO ${side} (${k}, tag, description) VALUES ($1, $2, $3)
      ON CONFLICT (${k}, tag) DO UPDATE SET description = EXCLUDED.description`,
    joinOn: (tag) => `LEFT JOIN ${side} s ON s.${k} = $1 AND s.tag = ${tag}`,
    columns: `s.fence_epoch, s.generation::text AS generation${describes ? ', s.description' : ''}`,
    whereTag: (tag) => `WHERE ${tag} = $2`,
    byteOrder: (tag) => `ORDER BY ${tag} COLLATE "C"`,
  };
}

/** The foreign table's alias in a joined SELECT: the foreign columns a store asks for name it (`f.max_id`). */
const FOREIGN_ALIAS = 'f';

export class SideTable {
  /** The foreign table (checked). */
  readonly foreign: string;
  /** Whether the side row keeps the tag's description. */
  readonly describes: boolean;
  /** The foreign table's column of the tag. */
  readonly tagColumn: string;
  private readonly sql: Statements;

  /** Names checked: legal table names, and two different tables. */
  constructor(schema: ForeignSchema, options: ForeignTableOptions, dialect: SqlDialect) {
    this.foreign = tableName(options.table ?? schema.defaultTable);
    const side = tableName(options.sideTable ?? schema.defaultSideTable);
    if (side === this.foreign) throw new InvalidArgumentError(`store: the side table must differ from the ${schema.system} table`);
    const names = { side, keyColumn: schema.keyColumn, describes: schema.describes };
    this.describes = schema.describes;
    this.tagColumn = schema.tagColumn;
    this.sql = dialect === 'mysql' ? mysqlStatements(names) : postgresStatements(names);
  }

  /**
   * Refuses a missing foreign table (a mistyped name must not silently become
   * an empty table where `tag create` would start again at 1), then creates
   * the side table if it is not there.
   */
  async ensure(run: RunSql, missing: string): Promise<void> {
    if ((await run(this.sql.foreignExists, [this.foreign])).rows.length === 0) throw new UnavailableError('STORE_UNAVAILABLE', missing);
    await run(this.sql.create, []);
  }

  /** `locking`: FOR UPDATE, for a give-back's compare (a locking read sees the latest commit). */
  async read(run: RunSql, tag: string, locking = false): Promise<SideState> {
    const { rows } = await run(`${this.sql.read}${locking ? ' FOR UPDATE' : ''}`, [this.foreign, tag]);
    const row = rows[0] as { fence_epoch: number | string; generation: string | number } | undefined;
    return { fenceEpoch: Number(row?.fence_epoch ?? 0), generation: row ? String(row.generation) : LEGACY_GENERATION };
  }

  /** A new creation of the tag: a fresh generation, fence epoch 0 (as a new row of Sequoia's own table). */
  async created(run: RunSql, tag: string): Promise<void> {
    await run(this.sql.created, [this.foreign, tag, newGeneration()]);
  }

  /**
   * The foreign row was deleted: a fresh generation, the fence epoch kept, so
   * a row the other system's admins insert again with SQL is another creation
   * and an old give-back cannot land in it.
   */
  async deleted(run: RunSql, tag: string): Promise<void> {
    await run(this.sql.deleted, [this.foreign, tag, newGeneration()]);
  }

  async fenced(run: RunSql, tag: string): Promise<void> {
    await run(this.sql.fenced, [this.foreign, tag]);
  }

  /** Only where the side table `describes`. */
  async described(run: RunSql, tag: string, description: string): Promise<void> {
    await run(this.sql.described, [this.foreign, tag, description]);
  }

  /**
   * `SELECT <foreignColumns>, <side columns> FROM <foreign> f LEFT JOIN <side> …`:
   * the foreign table's rows with their side state, `one` the tag's (values:
   * [foreign, tag]), `all` every tag's in byte order (values: [foreign]).
   * `foreignColumns` name the foreign table `f`.
   */
  joined(foreignColumns: string): { one: string; all: string } {
    const tag = `${FOREIGN_ALIAS}.${this.tagColumn}`;
    const select = `SELECT ${foreignColumns}, ${this.sql.columns}
      FROM ${this.foreign} ${FOREIGN_ALIAS} ${this.sql.joinOn(tag)}`;
    return { one: `${select} ${this.sql.whereTag(tag)}`, all: `${select} ${this.sql.byteOrder(tag)}` };
  }
}
