/**
 * uid-generator's WORKER_NODE table and a stand-in of its worker-id
 * assignment, transcribed from baidu/uid-generator:
 *
 * - src/main/scripts/WORKER_NODE.sql (the DDL below, table renamed);
 * - WORKER_NODE.xml, insert `addWorkerNode` (useGeneratedKeys, keyProperty id):
 *     INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED)
 *     VALUES (#{hostName}, #{port}, #{type}, #{launchDate}, NOW(), NOW())
 * - DisposableWorkerIdAssigner.assignWorkerId (@Transactional, one insert): on a
 *   machine TYPE = ACTUAL (2), HOST_NAME = the local address, PORT =
 *   `System.currentTimeMillis() + "-" + RandomUtils.nextInt(100000)`; the
 *   worker id is the generated ID. Each start of a generator is one such call,
 *   on a connection of its own.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';

export function workerNodeDdlMysql(table: string): string {
  return `CREATE TABLE ${table}
(
ID BIGINT NOT NULL AUTO_INCREMENT COMMENT 'auto increment id',
HOST_NAME VARCHAR(64) NOT NULL COMMENT 'host name',
PORT VARCHAR(64) NOT NULL COMMENT 'port',
TYPE INT NOT NULL COMMENT 'node type: ACTUAL or CONTAINER',
LAUNCH_DATE DATE NOT NULL COMMENT 'launch date',
MODIFIED TIMESTAMP NOT NULL COMMENT 'modified time',
CREATED TIMESTAMP NOT NULL COMMENT 'created time',
PRIMARY KEY(ID)
)
 COMMENT='DB WorkerID Assigner for UID Generator',ENGINE = INNODB`;
}

/** The same table on PostgreSQL, as docs/migrate.md gives it: BIGSERIAL for AUTO_INCREMENT. */
export function workerNodeDdlPostgres(table: string): string {
  return `CREATE TABLE ${table} (
  id BIGSERIAL PRIMARY KEY,
  host_name VARCHAR(64) NOT NULL,
  port VARCHAR(64) NOT NULL,
  type INT NOT NULL,
  launch_date DATE NOT NULL,
  modified TIMESTAMP NOT NULL,
  created TIMESTAMP NOT NULL
)`;
}

function actualNode(): [string, string, number, string] {
  const launchDate = new Date().toISOString().slice(0, 10);
  return ['127.0.0.1', `${Date.now()}-${Math.floor(Math.random() * 100000)}`, 2, launchDate];
}

/** One start of a uid-generator: its worker id. */
export async function assignWorkerIdMysql(url: string, table: string): Promise<string> {
  const c = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true });
  try {
    await c.beginTransaction();
    const [r] = await c.execute<mysql.ResultSetHeader>(
      `INSERT INTO ${table} (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES (?, ?, ?, ?, NOW(), NOW())`,
      actualNode(),
    );
    await c.commit();
    return String(r.insertId);
  } finally {
    await c.end();
  }
}

export async function assignWorkerIdPostgres(url: string, table: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('BEGIN');
    const r = await c.query<{ id: string }>(
      `INSERT INTO ${table} (host_name, port, type, launch_date, modified, created) VALUES ($1, $2, $3, $4, NOW(), NOW()) RETURNING id::text AS id`,
      actualNode(),
    );
    await c.query('COMMIT');
    return (r.rows[0] as { id: string }).id;
  } finally {
    await c.end();
  }
}
