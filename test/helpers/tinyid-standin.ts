/**
 * Tinyid's table and a faithful stand-in of its segment allocation path,
 * transcribed from didi/tinyid:
 *
 * - tinyid-server/db.sql: the `tiny_id_info` DDL (MySQL), below with the
 *   table renamed, and its port to PostgreSQL.
 * - TinyIdInfoDAOImpl:
 *     queryByBizType: "select id, biz_type, begin_id, max_id, step, delta, remainder,
 *                      create_time, update_time, version from tiny_id_info where biz_type = ?"
 *     updateMaxId:    "update tiny_id_info set max_id= ?, update_time=now(), version=version+1
 *                      where id=? and max_id=? and version=? and biz_type=?"
 * - DbSegmentIdServiceImpl.getNextSegmentId: @Transactional(isolation =
 *   READ_COMMITTED); for (i < Constants.RETRY = 3) { query; newMaxId = maxId + step;
 *   if updateMaxId(...) == 1 return convert(info) } throw "get next segmentId conflict".
 *   convert: currentId = maxId - step, maxId, delta, remainder.
 * - SegmentId.init/nextId: the IDs of (currentId, maxId] with id % delta == remainder.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';

/** tinyid-server/db.sql, table renamed; `binary` makes biz_type case-sensitive as Sequoia's tags are. */
export function tinyidDdlMysql(table: string, options: { binary?: boolean } = {}): string {
  const coll = options.binary ? ' CHARACTER SET utf8mb4 COLLATE utf8mb4_bin' : '';
  return `CREATE TABLE \`${table}\` (
  \`id\` bigint(20) NOT NULL AUTO_INCREMENT COMMENT '自增主键',
  \`biz_type\` varchar(63)${coll} NOT NULL DEFAULT '' COMMENT '业务类型，唯一',
  \`begin_id\` bigint(20) NOT NULL DEFAULT '0' COMMENT '开始id，仅记录初始值，无其他含义。初始化时begin_id和max_id应相同',
  \`max_id\` bigint(20) NOT NULL DEFAULT '0' COMMENT '当前最大id',
  \`step\` int(11) DEFAULT '0' COMMENT '步长',
  \`delta\` int(11) NOT NULL DEFAULT '1' COMMENT '每次id增量',
  \`remainder\` int(11) NOT NULL DEFAULT '0' COMMENT '余数',
  \`create_time\` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00' COMMENT '创建时间',
  \`update_time\` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00' COMMENT '更新时间',
  \`version\` bigint(20) NOT NULL DEFAULT '0' COMMENT '版本号',
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`uniq_biz_type\` (\`biz_type\`)
) ENGINE=InnoDB AUTO_INCREMENT=1 DEFAULT CHARSET=utf8 COMMENT 'id信息表'`;
}

/** The same table on PostgreSQL (the port docs/migrate.md shows). */
export function tinyidDdlPostgres(table: string): string {
  return `CREATE TABLE ${table} (
  id BIGSERIAL PRIMARY KEY,
  biz_type VARCHAR(63) NOT NULL DEFAULT '' UNIQUE,
  begin_id BIGINT NOT NULL DEFAULT 0,
  max_id BIGINT NOT NULL DEFAULT 0,
  step INTEGER DEFAULT 0,
  delta INTEGER NOT NULL DEFAULT 1,
  remainder INTEGER NOT NULL DEFAULT 0,
  create_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  update_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  version BIGINT NOT NULL DEFAULT 0
)`;
}

/** A Tinyid admin's row, as in db.sql's sample data (begin_id = max_id). */
export function tinyidRowSql(
  table: string,
  r: { bizType: string; maxId: bigint; step: number; delta?: number; remainder?: number },
): string {
  const q = (s: string) => `'${s.replace(/'/g, "''")}'`;
  return `INSERT INTO ${table} (biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version)
    VALUES (${q(r.bizType)}, ${r.maxId}, ${r.maxId}, ${r.step}, ${r.delta ?? 1}, ${r.remainder ?? 0}, '2018-07-21 23:52:58', '2018-07-22 23:19:27', 1)`;
}

/** DbSegmentIdServiceImpl's answer (SegmentId), before SegmentId hands out its IDs. */
export interface TinyidSegment {
  /** Exclusive lower bound: SegmentId.currentId at convert(). */
  readonly currentId: bigint;
  /** Inclusive upper bound. */
  readonly maxId: bigint;
  readonly delta: number;
  readonly remainder: number;
}

/** Thrown as DbSegmentIdServiceImpl's TinyIdSysException("get next segmentId conflict") after 3 lost races. */
export class TinyidConflict extends Error {}

const RETRY = 3;
const SELECT = 'select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version from';

interface InfoRow {
  id: string;
  biz_type: string;
  max_id: string;
  step: number | string;
  delta: number | string | null;
  remainder: number | string | null;
  version: string;
}

function convert(info: InfoRow, newMaxId: bigint): TinyidSegment {
  return {
    currentId: newMaxId - BigInt(info.step),
    maxId: newMaxId,
    remainder: info.remainder === null ? 0 : Number(info.remainder),
    delta: info.delta === null ? 1 : Number(info.delta),
  };
}

/** Tinyid's DbSegmentIdServiceImpl on one backend. */
export interface TinyidService {
  getNextSegmentId(bizType: string): Promise<TinyidSegment>;
  close(): Promise<void>;
}

/** TinyIdInfoDAOImpl's two statements on one backend, on the transaction's connection. */
interface InfoDao {
  queryByBizType(bizType: string): Promise<InfoRow | undefined>;
  /** The rows updated. */
  updateMaxId(newMaxId: bigint, info: InfoRow): Promise<number>;
}

/** A connection of either driver, as the stand-in uses it. */
interface Connection {
  query(sql: string, values?: unknown[]): Promise<unknown>;
  release(): void;
}

/** getNextSegmentId's body: in one READ COMMITTED transaction (`begin` opens it), up to RETRY optimistic updates. */
async function nextSegmentId(c: Connection, begin: readonly string[], dao: InfoDao, bizType: string): Promise<TinyidSegment> {
  try {
    for (const sql of begin) await c.query(sql);
    for (let i = 0; i < RETRY; i++) {
      const info = await dao.queryByBizType(bizType);
      if (!info) throw new Error(`can not find biztype:${bizType}`);
      const newMaxId = BigInt(info.max_id) + BigInt(info.step);
      if ((await dao.updateMaxId(newMaxId, info)) === 1) {
        await c.query('COMMIT');
        return convert(info, newMaxId);
      }
    }
    throw new TinyidConflict('get next segmentId conflict');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}

/** updateMaxId's values, in its placeholders' order. */
const updateValues = (newMaxId: bigint, info: InfoRow) => [newMaxId.toString(), info.id, info.max_id, info.version, info.biz_type];

export function mysqlTinyidService(uri: string, table: string): TinyidService {
  const pool = mysql.createPool({ uri, connectionLimit: 4, supportBigNumbers: true, bigNumberStrings: true });
  return {
    async getNextSegmentId(bizType) {
      const c = await pool.getConnection();
      return nextSegmentId(
        c,
        ['SET TRANSACTION ISOLATION LEVEL READ COMMITTED', 'START TRANSACTION'],
        {
          queryByBizType: async (b) =>
            (await c.query<mysql.RowDataPacket[]>(`${SELECT} ${table} where biz_type = ?`, [b]))[0][0] as InfoRow | undefined,
          updateMaxId: async (newMaxId, info) =>
            (
              await c.query<mysql.ResultSetHeader>(
                `update ${table} set max_id= ?, update_time=now(), version=version+1 where id=? and max_id=? and version=? and biz_type=?`,
                updateValues(newMaxId, info),
              )
            )[0].affectedRows,
        },
        bizType,
      );
    },
    close: () => pool.end(),
  };
}

export function postgresTinyidService(connectionString: string, table: string): TinyidService {
  const pool = new pg.Pool({ connectionString, max: 4 });
  pool.on('error', () => {});
  return {
    async getNextSegmentId(bizType) {
      const c = await pool.connect();
      return nextSegmentId(
        c,
        ['BEGIN ISOLATION LEVEL READ COMMITTED'],
        {
          queryByBizType: async (b) =>
            (
              await c.query(
                `select id::text as id, biz_type, begin_id, max_id::text as max_id, step, delta, remainder, create_time, update_time, version::text as version
               from ${table} where biz_type = $1`,
                [b],
              )
            ).rows[0] as InfoRow | undefined,
          updateMaxId: async (newMaxId, info) =>
            (
              await c.query(
                `update ${table} set max_id= $1, update_time=now(), version=version+1 where id=$2 and max_id=$3 and version=$4 and biz_type=$5`,
                updateValues(newMaxId, info),
              )
            ).rowCount ?? 0,
        },
        bizType,
      );
    },
    close: () => pool.end(),
  };
}

/**
 * SegmentId.init then nextId until OVER: every ID the segment hands out.
 * Java's `%` keeps the dividend's sign, as BigInt's does.
 */
export function segmentIds(s: TinyidSegment): bigint[] {
  const delta = BigInt(s.delta);
  const remainder = BigInt(s.remainder);
  let current = s.currentId;
  if (current % delta !== remainder) {
    for (let i = 0; i <= s.delta; i++) {
      current += 1n;
      if (current % delta === remainder) {
        current -= delta;
        break;
      }
    }
  }
  const out: bigint[] = [];
  for (;;) {
    current += delta;
    if (current > s.maxId) return out;
    out.push(current);
  }
}
