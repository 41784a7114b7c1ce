/**
 * Worker-id leases in the same SQLite file as the segments (the same handle
 * when opened from one store URL: sqlite-connection.ts). `acquire` and
 * `registerNode` are `BEGIN IMMEDIATE` transactions, so processes sharing the
 * file take ids one at a time. Expiry uses this machine's clock:
 * every process sharing a SQLite file is on one machine.
 */
import type Database from 'better-sqlite3';
import { UnavailableError } from '../../core/errors.js';
import type { AcquireRequest, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/choose-worker.js';
import { storeError } from '../kit/store-boundary.js';
import { SqliteConnection } from './sqlite-connection.js';

export class SqliteWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'sqlite';
  private db: Database.Database | undefined;
  private readonly connection: SqliteConnection;

  /** `target`: a file path (its own handle) or the connection shared with the segment store. */
  constructor(
    target: string | SqliteConnection,
    private readonly now: () => number = Date.now,
  ) {
    this.connection = typeof target === 'string' ? new SqliteConnection({ path: target, busyTimeoutMs: 5000 }) : target;
  }

  async init(): Promise<void> {
    if (this.db) return;
    try {
      const db = this.connection.acquire('leases', (db) => {
        db.transaction(() => {
          db.exec(`CREATE TABLE IF NOT EXISTS sequoia_worker_lease (
            space TEXT NOT NULL,
            worker_id INTEGER NOT NULL,
            owner TEXT NOT NULL,
            generation INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            last_tick INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (space, worker_id)
          )`);
          db.exec(`CREATE TABLE IF NOT EXISTS sequoia_worker_node (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space TEXT NOT NULL,
            host TEXT NOT NULL,
            started_at INTEGER NOT NULL
          )`);
        }).immediate();
      });
      this.db = db;
    } catch (e) {
      throw wrap(e);
    }
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    const db = this.open();
    try {
      return db
        .transaction((): LeaseRecord | { refused: string } => {
          const now = this.now();
          const rows = (
            db.prepare('SELECT worker_id, owner, expires_at FROM sequoia_worker_lease WHERE space = ?').all(req.space) as {
              worker_id: number;
              owner: string;
              expires_at: number;
            }[]
          ).map((r): LeaseRow => ({ workerId: r.worker_id, owner: r.owner, expiresAtMs: r.expires_at }));
          const c = chooseWorker(rows, now, req);
          if ('refused' in c) return c;
          const expiresAt = now + req.ttlMs;
          const row = take(db, req.space, c.workerId, req.owner, expiresAt, now);
          return { workerId: c.workerId, generation: row.generation, lastTick: row.last_tick, expiresAtMs: expiresAt };
        })
        .immediate();
    } catch (e) {
      throw wrap(e);
    }
  }

  async renew(space: string, workerId: number, owner: string, generation: number, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const db = this.open();
    try {
      const now = this.now();
      const r = db
        .prepare(
          `UPDATE sequoia_worker_lease SET expires_at = ?, last_tick = MAX(last_tick, ?), updated_at = ?
           WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ? RETURNING last_tick`,
        )
        .get(now + ttlMs, lastTick, now, space, workerId, owner, generation) as { last_tick: number } | undefined;
      return r ? { workerId, generation, lastTick: r.last_tick, expiresAtMs: now + ttlMs } : undefined;
    } catch (e) {
      throw wrap(e);
    }
  }

  async release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void> {
    try {
      this.open()
        .prepare(
          `UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = ?, updated_at = ?
           WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?`,
        )
        .run(lastTick, this.now(), space, workerId, owner, generation);
    } catch (e) {
      throw wrap(e);
    }
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    const db = this.open();
    try {
      return db
        .transaction((): NodeClaim => {
          const now = this.now();
          for (;;) {
            const id = Number(db.prepare('INSERT INTO sequoia_worker_node (space, host, started_at) VALUES (?, ?, ?)').run(space, host, now).lastInsertRowid);
            if (id >= workerCount) return { workerId: id, lastTick: -1 };
            const held = db.prepare('SELECT 1 FROM sequoia_worker_lease WHERE space = ? AND worker_id = ? AND expires_at > ?').get(space, id, now);
            if (!held) return { workerId: id, lastTick: take(db, space, id, nodeOwner(host), CLAIMED_FOR_GOOD_MS, now).last_tick };
          }
        })
        .immediate();
    } catch (e) {
      throw wrap(e);
    }
  }

  async close(): Promise<void> {
    if (this.db) this.connection.release();
    this.db = undefined;
  }

  private open(): Database.Database {
    if (!this.db) throw new UnavailableError('STORE_UNAVAILABLE', 'the SQLite lease store is not open');
    return this.db;
  }
}

/** Gives the id to `owner` (a new generation), keeping the last tick; inside the caller's transaction. */
function take(db: Database.Database, space: string, workerId: number, owner: string, expiresAt: number, now: number): { generation: number; last_tick: number } {
  return db
    .prepare(
      `INSERT INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick, updated_at)
       VALUES (?, ?, ?, 1, ?, -1, ?)
       ON CONFLICT (space, worker_id) DO UPDATE SET owner = excluded.owner, generation = generation + 1,
         expires_at = excluded.expires_at, updated_at = excluded.updated_at
       RETURNING generation, last_tick`,
    )
    .get(space, workerId, owner, expiresAt, now) as { generation: number; last_tick: number };
}

const wrap = (e: unknown) => storeError('SQLite lease store', e);
