/**
 * Worker-id leases on MySQL 8 / MariaDB 10.11+. `acquire` and `registerNode`
 * are each one transaction that first locks a guard row of the space
 * (worker_id -1, `SELECT … FOR UPDATE`), so concurrent starters take ids one
 * at a time; expiry is in the server's clock. Only parameterised SQL; BIGINTs are read as strings.
 * Every lease change writes its row of the lease ledger (`sequoia_lease_ledger`)
 * in the same transaction.
 */
import { type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import type { LeaseEventKind, LeaseHolder, LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/choose-worker.js';
import {
  ENTRY_COLUMNS,
  type EntryRow,
  HELD_FOR_GOOD_TICK,
  HOLDING_COLUMNS,
  HOLDING_GROUP,
  type HoldingRow,
  covers,
  firstTick,
  holderOf,
  takeKind,
  toEntry,
  toHolding,
} from '../kit/lease-ledger-rules.js';
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
      const choice = chooseWorker(rows, now, req);
      if ('refused' in choice) return choice;
      const kind = takeKind(rows.find((r) => r.workerId === choice.workerId));
      const got = await take(c, req.space, choice.workerId, req.owner, now + req.ttlMs);
      const from = firstTick(req.nowTick, got.lastTick);
      await record(c, req.space, choice.workerId, got.generation, kind, req.owner, holderOf(req.owner, req.holder), from, from - 1);
      return { workerId: choice.workerId, generation: got.generation, lastTick: got.lastTick, expiresAtMs: now + req.ttlMs };
    });
  }

  async renew(
    space: string,
    workerId: number,
    owner: string,
    generation: number,
    ttlMs: number,
    lastTick: number,
  ): Promise<LeaseRecord | undefined> {
    return this.inTransaction(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `UPDATE sequoia_worker_lease SET expires_at = ${NOW_MS} + ?, last_tick = GREATEST(last_tick, ?), updated_at = NOW(3)
         WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?`,
        [ttlMs, String(lastTick), space, workerId, owner, generation],
      );
      if (r.affectedRows !== 1) return undefined;
      const [rows] = await c.query<RowDataPacket[]>(
        'SELECT last_tick, expires_at FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?',
        [space, workerId],
      );
      const horizon = Number(rows[0]?.last_tick);
      await recordAfter(c, space, workerId, generation, 'renew', owner, horizon);
      return { workerId, generation, lastTick: horizon, expiresAtMs: Number(rows[0]?.expires_at) };
    });
  }

  async release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void> {
    await this.inTransaction(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = ?, updated_at = NOW(3)
         WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?`,
        [String(lastTick), space, workerId, owner, generation],
      );
      if (r.affectedRows === 1) await recordAfter(c, space, workerId, generation, 'release', owner, lastTick);
    });
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    return this.inSpace(space, async (c) => {
      for (;;) {
        const [r] = await c.query<ResultSetHeader>('INSERT INTO sequoia_worker_node (space, host, started_at) VALUES (?, ?, NOW(3))', [
          space,
          host,
        ]);
        const id = Number(r.insertId);
        if (id >= workerCount) return { workerId: id, lastTick: -1 };
        const [prev] = await c.query<RowDataPacket[]>(
          `SELECT expires_at, expires_at > ${NOW_MS} AS live FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?`,
          [space, id],
        );
        const p = prev[0];
        if (p && Number(p.live) === 1) continue;
        const owner = nodeOwner(host);
        const got = await take(c, space, id, owner, CLAIMED_FOR_GOOD_MS);
        const kind = takeKind(p && { expiresAtMs: Number(p.expires_at) });
        await record(
          c,
          space,
          id,
          got.generation,
          kind,
          owner,
          holderOf(owner, undefined),
          firstTick(undefined, got.lastTick),
          HELD_FOR_GOOD_TICK,
        );
        return { workerId: id, lastTick: got.lastTick };
      }
    });
  }

  async holdersAt(space: string, workerId: number, tick: number): Promise<readonly LeaseHolding[]> {
    return (await this.holdingsOf(space, workerId)).filter((h) => covers(h, tick));
  }

  async holdings(space: string): Promise<readonly LeaseHolding[]> {
    return this.holdingsOf(space, undefined);
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return this.withConnection(async (c) => {
      const [rows] = await c.query<RowDataPacket[]>(
        `SELECT ${ENTRY_COLUMNS} FROM sequoia_lease_ledger WHERE space = ? AND worker_id = ? ORDER BY seq`,
        [space, workerId],
      );
      return rows.map((r) => toEntry(space, r as unknown as EntryRow));
    });
  }

  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    return this.withConnection(async (c) => {
      const [r] = await c.query<ResultSetHeader>(
        `DELETE FROM sequoia_lease_ledger WHERE at_ms < ${NOW_MS} - ? AND until_tick < ? ORDER BY seq LIMIT ?`,
        [String(retentionMs), String(HELD_FOR_GOOD_TICK), limit],
      );
      return r.affectedRows;
    });
  }

  private holdingsOf(space: string, workerId: number | undefined): Promise<LeaseHolding[]> {
    return this.withConnection(async (c) => {
      const [rows] = await c.query<RowDataPacket[]>(
        `SELECT ${HOLDING_COLUMNS} FROM sequoia_lease_ledger WHERE space = ?${workerId === undefined ? '' : ' AND worker_id = ?'} ${HOLDING_GROUP}`,
        workerId === undefined ? [space] : [space, workerId],
      );
      return rows.map((r) => toHolding(r as unknown as HoldingRow));
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

  private inTransaction<T>(fn: (c: PoolConnection) => Promise<T>): Promise<T> {
    return this.withConnection(async (c) => {
      await c.beginTransaction();
      try {
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
async function take(
  c: PoolConnection,
  space: string,
  workerId: number,
  owner: string,
  expiresAt: number,
): Promise<{ generation: number; lastTick: number }> {
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

/** One ledger row; inside the caller's transaction. */
async function record(
  c: PoolConnection,
  space: string,
  workerId: number,
  generation: number,
  kind: LeaseEventKind,
  owner: string,
  h: LeaseHolder,
  fromTick: number,
  untilTick: number,
): Promise<void> {
  await c.query(
    `INSERT INTO sequoia_lease_ledger (space, worker_id, generation, kind, owner, host, pid, instance, version, from_tick, until_tick, at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${NOW_MS})`,
    [space, workerId, generation, kind, owner, h.host, h.pid, h.instance, h.version, String(fromTick), String(untilTick)],
  );
}

/** A renewal or release: the holding's first tick and holder come from its latest row (only the horizon, before the ledger existed). */
async function recordAfter(
  c: PoolConnection,
  space: string,
  workerId: number,
  generation: number,
  kind: LeaseEventKind,
  owner: string,
  untilTick: number,
): Promise<void> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT ${ENTRY_COLUMNS} FROM sequoia_lease_ledger WHERE space = ? AND worker_id = ? AND generation = ? ORDER BY seq DESC LIMIT 1`,
    [space, workerId, generation],
  );
  const prev = rows[0] as unknown as EntryRow | undefined;
  const p = prev && toEntry(space, prev);
  await record(c, space, workerId, generation, kind, owner, p?.holder ?? holderOf(owner, undefined), p?.fromTick ?? untilTick, untilTick);
}
