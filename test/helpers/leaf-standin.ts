/**
 * Leaf's table and a faithful stand-in of Leaf's segment allocation path,
 * transcribed from Meituan-Dianping/Leaf (leaf-core):
 *
 * - IDAllocMapper:
 *     @Update("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = #{tag}")
 *     @Update("UPDATE leaf_alloc SET max_id = max_id + #{step} WHERE biz_tag = #{key}")
 *     @Select("SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = #{tag}")
 * - IDAllocDaoImpl.updateMaxIdAndGetLeafAlloc / updateMaxIdByCustomStepAndGetLeafAlloc:
 *     openSession() (autocommit off: one JDBC transaction), update, selectOne, commit.
 * - SegmentIDGenImpl.updateSegmentFromDb: the first load uses the stored step;
 *   later loads double the step if the last segment lasted < 15 min (cap
 *   MAX_STEP = 1,000,000), keep it under 30 min, else halve it (never below
 *   the stored step); the segment is [max_id - step, max_id).
 *
 * The table DDL is Leaf's scripts/leaf_alloc.sql (MySQL) and its port to PostgreSQL.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';

/** Leaf's scripts/leaf_alloc.sql, table renamed; `binary` makes biz_tag case-sensitive as Sequoia's tags are. */
export function leafDdlMysql(table: string, options: { binary?: boolean } = {}): string {
  const coll = options.binary ? ' CHARACTER SET utf8mb4 COLLATE utf8mb4_bin' : '';
  return `CREATE TABLE \`${table}\` (
  \`biz_tag\` varchar(128)${coll} NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256)  DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`;
}

/** The same table on PostgreSQL (no ON UPDATE: Leaf's SQL never sets update_time itself). */
export function leafDdlPostgres(table: string): string {
  return `CREATE TABLE ${table} (
  biz_tag VARCHAR(128) NOT NULL DEFAULT '',
  max_id BIGINT NOT NULL DEFAULT 1,
  step INTEGER NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
)`;
}

export interface LeafAlloc {
  readonly key: string;
  readonly maxId: bigint;
  readonly step: number;
}

/** Leaf's IDAllocDao on one backend. */
export interface LeafDao {
  updateMaxIdAndGetLeafAlloc(tag: string): Promise<LeafAlloc>;
  updateMaxIdByCustomStepAndGetLeafAlloc(tag: string, step: number): Promise<LeafAlloc>;
  close(): Promise<void>;
}

export function mysqlLeafDao(uri: string, table: string): LeafDao {
  const pool = mysql.createPool({ uri, connectionLimit: 4, supportBigNumbers: true, bigNumberStrings: true });
  const run = async (update: string, params: unknown[], tag: string): Promise<LeafAlloc> => {
    const c = await pool.getConnection();
    try {
      await c.query('SET autocommit = 0'); // sqlSessionFactory.openSession(): autoCommit false
      await c.query(update, params);
      const [rows] = await c.query<mysql.RowDataPacket[]>(`SELECT biz_tag, max_id, step FROM ${table} WHERE biz_tag = ?`, [tag]);
      await c.query('COMMIT');
      const r = rows[0];
      if (!r) throw new Error(`leaf: no row for ${tag}`);
      return { key: String(r.biz_tag), maxId: BigInt(String(r.max_id)), step: Number(r.step) };
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      await c.query('SET autocommit = 1').catch(() => {});
      c.release();
    }
  };
  return {
    updateMaxIdAndGetLeafAlloc: (tag) => run(`UPDATE ${table} SET max_id = max_id + step WHERE biz_tag = ?`, [tag], tag),
    updateMaxIdByCustomStepAndGetLeafAlloc: (tag, step) =>
      run(`UPDATE ${table} SET max_id = max_id + ? WHERE biz_tag = ?`, [step, tag], tag),
    close: () => pool.end(),
  };
}

export function postgresLeafDao(connectionString: string, table: string): LeafDao {
  const pool = new pg.Pool({ connectionString, max: 4 });
  pool.on('error', () => {});
  const run = async (update: string, params: unknown[], tag: string): Promise<LeafAlloc> => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await c.query(update, params);
      const r = await c.query(`SELECT biz_tag, max_id::text AS max_id, step FROM ${table} WHERE biz_tag = $1`, [tag]);
      await c.query('COMMIT');
      const row = r.rows[0] as { biz_tag: string; max_id: string; step: number } | undefined;
      if (!row) throw new Error(`leaf: no row for ${tag}`);
      return { key: row.biz_tag, maxId: BigInt(row.max_id), step: row.step };
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      c.release();
    }
  };
  return {
    updateMaxIdAndGetLeafAlloc: (tag) => run(`UPDATE ${table} SET max_id = max_id + step WHERE biz_tag = $1`, [tag], tag),
    updateMaxIdByCustomStepAndGetLeafAlloc: (tag, step) =>
      run(`UPDATE ${table} SET max_id = max_id + $2 WHERE biz_tag = $1`, [tag, step], tag),
    close: () => pool.end(),
  };
}

const SEGMENT_DURATION = 15 * 60 * 1000;
const MAX_STEP = 1_000_000;

/** SegmentIDGenImpl's buffer state for one key and its updateSegmentFromDb. */
export class LeafSegmentLoader {
  private initOk = false;
  private updateTimestamp = 0;
  private step = 0;
  private minStep = 0;

  constructor(
    private readonly dao: LeafDao,
    private readonly key: string,
    /** Test hook: how long the last segment "lasted", to drive the dynamic step. */
    private readonly now: () => number = Date.now,
  ) {}

  /** One updateSegmentFromDb: answers the segment [start, max) it loaded. */
  async load(): Promise<{ start: bigint; max: bigint; step: number }> {
    let leafAlloc: LeafAlloc;
    if (!this.initOk) {
      leafAlloc = await this.dao.updateMaxIdAndGetLeafAlloc(this.key);
      this.step = leafAlloc.step;
      this.minStep = leafAlloc.step;
      this.initOk = true;
    } else if (this.updateTimestamp === 0) {
      leafAlloc = await this.dao.updateMaxIdAndGetLeafAlloc(this.key);
      this.updateTimestamp = this.now();
      this.step = leafAlloc.step;
      this.minStep = leafAlloc.step;
    } else {
      const duration = this.now() - this.updateTimestamp;
      let nextStep = this.step;
      if (duration < SEGMENT_DURATION) {
        if (nextStep * 2 <= MAX_STEP) nextStep = nextStep * 2;
      } else if (duration < SEGMENT_DURATION * 2) {
        // keep
      } else {
        nextStep = Math.floor(nextStep / 2) >= this.minStep ? Math.floor(nextStep / 2) : nextStep;
      }
      leafAlloc = await this.dao.updateMaxIdByCustomStepAndGetLeafAlloc(this.key, nextStep);
      this.updateTimestamp = this.now();
      this.step = nextStep;
      this.minStep = leafAlloc.step;
    }
    return { start: leafAlloc.maxId - BigInt(this.step), max: leafAlloc.maxId, step: this.step };
  }
}
