/**
 * Worker-id leases on MySQL 8 / MariaDB 10.11+. `acquire` and `registerNode`
 * are each one transaction that first locks a guard row of the space
 * (worker_id -1, `SELECT … FOR UPDATE`), so concurrent starters take ids one
 * at a time; expiry is in the server's clock. Only parameterised SQL; BIGINTs are read as strings.
 */
import { type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import type { AcquireRequest, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/choose-worker.js';
import { MysqlConnection } from './mysql-connection.js';

const NOW_MS = 'CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)';

export class MysqlWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'mysql';
  private readonly connection: MysqlConnection;
  private initialised = false;
  private closed = false;

  /** A URI opens a pool of its own; a connection is shared with the segment store. */
  constructor(connection: string | MysqlConnection) {
    this.connection = (typeof connection === 'string' ? new MysqlConnection({ uri: connection, maxConnections: 3 }) : connection).retain();
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.withConnection(async (c) => {
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_worker_lease (
        space VARCHAR(190) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        worker_id BIGINT NOT NULL,
        owner VARCHAR(255) NOT NULL,
        generation BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        last_tick BIGINT NOT NULL,
        updated_at DATETIME(3) NOT NULL,
        PRIMARY KEY (space, worker_id)
      ) ENGINE=InnoDB`);
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_worker_node (
        id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        space VARCHAR(190) NOT NULL,
        host VARCHAR(255) NOT NULL,
        started_at DATETIME(3) NOT NULL
      ) ENGINE=InnoDB`);
    });
    this.initialised = true;
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    return this.inSpace(req.space, async (c) => {
      const [nowRows] = await c.query<RowDataPacket[]>(`SELECT ${NOW_MS} AS now`);
      const now = Number(nowRows[0]?.now);
      const [rs] = await c.query<RowDataPacket[]>('SELECT worker_id, owner, expires_at FROM sequoia_worker_lease WHERE space = ? AND worker_id >= 0', [req.space]);
      const rows = rs.map((r): LeaseRow => ({ workerId: Number(r.worker_id), owner: String(r.owner), expiresAtMs: Number(r.expires_at) }));
      const choice = chooseWorker(rows, now, req);
      if ('refused' in choice) return choice;
      const got = await take(c, req.space, choice.workerId, req.owner, now + req.ttlMs);
      return { workerId: choice.workerId, generation: got.generation, lastTick: got.lastTick, expiresAtMs: now + req.ttlMs };
    });
  }

  async renew(space: string, workerId: number, owner: string, generation: number, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    return this.withConnection(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `UPDATE sequoia_worker_lease SET expires_at = ${NOW_MS} + ?, last_tick = GREATEST(last_tick, ?), updated_at = NOW(3)
         WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?`,
        [ttlMs, String(lastTick), space, workerId, owner, generation],
      );
      if (r.affectedRows !== 1) return undefined;
      const [rows] = await c.query<RowDataPacket[]>('SELECT last_tick, expires_at FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?', [space, workerId]);
      return { workerId, generation, lastTick: Number(rows[0]?.last_tick), expiresAtMs: Number(rows[0]?.expires_at) };
    });
  }

  async release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void> {
    await this.withConnection((c) =>
      c.query(
        `UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = ?, updated_at = NOW(3)
         WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?`,
        [String(lastTick), space, workerId, owner, generation],
      ),
    );
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    return this.inSpace(space, async (c) => {
      for (;;) {
        const [r] = await c.query<ResultSetHeader>('INSERT INTO sequoia_worker_node (space, host, started_at) VALUES (?, ?, NOW(3))', [space, host]);
        const id = Number(r.insertId);
        if (id >= workerCount) return { workerId: id, lastTick: -1 };
        const [held] = await c.query<RowDataPacket[]>(`SELECT 1 FROM sequoia_worker_lease WHERE space = ? AND worker_id = ? AND expires_at > ${NOW_MS}`, [space, id]);
        if (held.length === 0) return { workerId: id, lastTick: (await take(c, space, id, nodeOwner(host), CLAIMED_FOR_GOOD_MS)).lastTick };
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection.release();
  }

  /** One transaction holding the space's guard row (worker_id -1), so ids in the space are taken one at a time. */
  private inSpace<T>(space: string, fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.withConnection(async (c) => {
      // The guard row exists before the transaction that locks it.
      await c.query(
        `INSERT IGNORE INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick, updated_at)
         VALUES (?, -1, '', 0, 0, -1, NOW(3))`,
        [space],
      );
      await c.beginTransaction();
      try {
        await c.query('SELECT worker_id FROM sequoia_worker_lease WHERE space = ? AND worker_id = -1 FOR UPDATE', [space]);
        const result = await fn(c);
        await c.commit();
        return result;
      } catch (e) {
        await c.rollback().catch(() => {});
        throw e;
      }
    });
  }

  private withConnection<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.connection.withConnection('MySQL lease store', fn);
  }
}

/** Gives the id to `owner` (a new generation), keeping the last tick; inside the caller's transaction. */
async function take(c: PoolConnection, space: string, workerId: number, owner: string, expiresAt: number): Promise<{ generation: number; lastTick: number }> {
  await c.query(
    `INSERT INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick, updated_at)
     VALUES (?, ?, ?, 1, ?, -1, NOW(3))
     ON DUPLICATE KEY UPDATE owner = VALUES(owner), generation = generation + 1, expires_at = VALUES(expires_at), updated_at = NOW(3)`,
    [space, workerId, owner, String(expiresAt)],
  );
  const [got] = await c.query<RowDataPacket[]>('SELECT generation, last_tick FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?', [space, workerId]);
  return { generation: Number(got[0]?.generation), lastTick: Number(got[0]?.last_tick) };
}
