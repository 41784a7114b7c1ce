/**
 * Worker-id leases on MySQL 8 / MariaDB 10.11+. `acquire` and `registerNode`
 * are each one transaction that first locks a guard row of the space
 * (worker_id -1, `SELECT … FOR UPDATE`), so concurrent starters take ids one
 * at a time; expiry is in the server's clock. Only parameterised SQL; BIGINTs are read as strings.
 * Every lease change writes its row of the lease ledger (`sequoia_lease_ledger`)
 * in the same transaction.
 */
import { type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import type { LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import * as ledger from '../kit/lease/lease-ledger-rules.js';
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
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_lease_ledger (
        seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        space VARCHAR(190) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        worker_id BIGINT NOT NULL,
        generation BIGINT NOT NULL,
        kind VARCHAR(16) NOT NULL,
        owner VARCHAR(255) NOT NULL,
        host VARCHAR(255) NOT NULL,
        pid BIGINT NOT NULL,
        instance VARCHAR(255) NOT NULL,
        version VARCHAR(64) NOT NULL,
        from_tick BIGINT NOT NULL,
        until_tick BIGINT NOT NULL,
        at_ms BIGINT NOT NULL,
        KEY sequoia_lease_ledger_holding (space, worker_id, generation),
        KEY sequoia_lease_ledger_at (at_ms)
      ) ENGINE=InnoDB`);
    });
    this.initialised = true;
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    return this.inSpace(req.space, async (c) => {
      const [nowRows] = await c.query<RowDataPacket[]>(`SELECT ${NOW_MS} AS now`);
      const now = Number(nowRows[0]?.now);
      const [rs] = await c.query<RowDataPacket[]>(
        'SELECT worker_id, owner, expires_at FROM sequoia_worker_lease WHERE space = ? AND worker_id >= 0',
        [req.space],
      );
      const rows = rs.map((r): LeaseRow => ({ workerId: Number(r.worker_id), owner: String(r.owner), expiresAtMs: Number(r.expires_at) }));
      return ledger.grantFrom(rows, now, req, statements(c, req.space));
    });
  }

  async renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    return this.inTransaction(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `UPDATE sequoia_worker_lease SET expires_at = ${NOW_MS} + ?, last_tick = GREATEST(last_tick, ?), updated_at = NOW(3) ${HELD}`,
        [ttlMs, String(lastTick), ...heldValues(lease)],
      );
      if (r.affectedRows !== 1) return undefined;
      const [rows] = await c.query<RowDataPacket[]>(
        'SELECT last_tick, expires_at FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?',
        [lease.space, lease.workerId],
      );
      const horizon = Number(rows[0]?.last_tick);
      await recordAfter(c, lease, 'renew', horizon);
      return { workerId: lease.workerId, generation: lease.generation, lastTick: horizon, expiresAtMs: Number(rows[0]?.expires_at) };
    });
  }

  async release(lease: HeldLease, lastTick: number): Promise<void> {
    await this.inTransaction(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = ?, updated_at = NOW(3) ${HELD}`,
        [String(lastTick), ...heldValues(lease)],
      );
      if (r.affectedRows === 1) await recordAfter(c, lease, 'release', lastTick);
    });
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    return this.inSpace(space, (c) =>
      ledger.registerNodeWith(space, host, workerCount, {
        ...statements(c, space),
        insertNode: async () => {
          const [r] = await c.query<ResultSetHeader>('INSERT INTO sequoia_worker_node (space, host, started_at) VALUES (?, ?, NOW(3))', [
            space,
            host,
          ]);
          return Number(r.insertId);
        },
        leaseOf: async (id) => {
          const [rows] = await c.query<RowDataPacket[]>(
            `SELECT expires_at, expires_at > ${NOW_MS} AS live FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?`,
            [space, id],
          );
          const p = rows[0];
          return p && { expiresAtMs: Number(p.expires_at), live: Number(p.live) === 1 };
        },
      }),
    );
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const q = ledger.holdingsQuery(space, workerId);
    return (await this.select<ledger.HoldingRow>(q.sql, q.values)).map(ledger.toHolding);
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return (await this.select<ledger.EntryRow>(ledger.ENTRIES_QUERY, [space, workerId])).map((r) => ledger.toEntry(space, r));
  }

  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    return this.withConnection(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `DELETE FROM sequoia_lease_ledger WHERE at_ms < ${NOW_MS} - ? AND until_tick < ? ORDER BY seq LIMIT ?`,
        [String(retentionMs), String(ledger.HELD_FOR_GOOD_TICK), limit],
      );
      return r.affectedRows;
    });
  }

  private select<R>(sql: string, values: (string | number)[]): Promise<R[]> {
    return this.withConnection(async (c) => (await c.query<RowDataPacket[]>(sql, values))[0] as unknown as R[]);
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
      return transaction(c, async () => {
        await c.query('SELECT worker_id FROM sequoia_worker_lease WHERE space = ? AND worker_id = -1 FOR UPDATE', [space]);
        return fn(c);
      });
    });
  }

  private inTransaction<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.withConnection((c) => transaction(c, () => fn(c)));
  }

  private withConnection<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.connection.withConnection('MySQL lease store', fn);
  }
}

/** The lease row while its owner and generation still hold it; values: heldValues. */
const HELD = 'WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?';
const heldValues = (l: HeldLease): (string | number)[] => [l.space, l.workerId, l.owner, l.generation];

async function transaction<T>(c: PoolConnection, fn: () => Promise<T>): Promise<T> {
  await c.beginTransaction();
  try {
    const result = await fn();
    await c.commit();
    return result;
  } catch (e) {
    await c.rollback().catch(() => {});
    throw e;
  }
}

/** The writes of a take, in the caller's transaction. */
function statements(c: PoolConnection, space: string): ledger.TakeStatements {
  return { take: (workerId, owner, expiresAt) => take(c, space, workerId, owner, expiresAt), record: (row) => record(c, row) };
}

async function take(c: PoolConnection, space: string, workerId: number, owner: string, expiresAt: number): Promise<ledger.Taken> {
  await c.query(
    `INSERT INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick, updated_at)
     VALUES (?, ?, ?, 1, ?, -1, NOW(3))
     ON DUPLICATE KEY UPDATE owner = VALUES(owner), generation = generation + 1, expires_at = VALUES(expires_at), updated_at = NOW(3)`,
    [space, workerId, owner, String(expiresAt)],
  );
  const [got] = await c.query<RowDataPacket[]>('SELECT generation, last_tick FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?', [
    space,
    workerId,
  ]);
  return { generation: Number(got[0]?.generation), lastTick: Number(got[0]?.last_tick) };
}

/** One ledger row, in the caller's transaction. */
async function record(c: PoolConnection, row: ledger.LedgerRow): Promise<void> {
  await c.query(ledger.ledgerInsert(NOW_MS), ledger.ledgerValues(row));
}

async function recordAfter(c: PoolConnection, lease: HeldLease, kind: 'renew' | 'release', untilTick: number): Promise<void> {
  const [rows] = await c.query<RowDataPacket[]>(ledger.LATEST_QUERY, ledger.latestValues(lease));
  const latest = rows[0] as unknown as ledger.EntryRow | undefined;
  await record(c, ledger.followingRow(lease, kind, untilTick, latest && ledger.toEntry(lease.space, latest)));
}
