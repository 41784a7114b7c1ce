/**
 * Worker-id leases in the same SQLite file as the segments (the same handle
 * when opened from one store URL: sqlite-connection.ts). `acquire` and
 * `registerNode` are `BEGIN IMMEDIATE` transactions, so processes sharing the
 * file take ids one at a time. Expiry uses this machine's clock:
 * every process sharing a SQLite file is on one machine. Every lease change
 * writes its row of the lease ledger (`sequoia_lease_ledger`) in its own
 * transaction.
 */
import type Database from 'better-sqlite3';
import { UnavailableError } from '../../core/errors.js';
import type { LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/lease/choose-worker.js';
import * as ledger from '../kit/lease/lease-ledger-rules.js';
import { storeError } from '../kit/connection/store-boundary.js';
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
          db.exec(`CREATE TABLE IF NOT EXISTS sequoia_lease_ledger (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            space TEXT NOT NULL,
            worker_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            kind TEXT NOT NULL,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            instance TEXT NOT NULL,
            version TEXT NOT NULL,
            from_tick INTEGER NOT NULL,
            until_tick INTEGER NOT NULL,
            at_ms INTEGER NOT NULL
          )`);
          db.exec('CREATE INDEX IF NOT EXISTS sequoia_lease_ledger_holding ON sequoia_lease_ledger (space, worker_id, generation)');
          db.exec('CREATE INDEX IF NOT EXISTS sequoia_lease_ledger_at ON sequoia_lease_ledger (at_ms)');
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
          const taken = take(db, req.space, c.workerId, req.owner, expiresAt, now);
          record(db, ledger.grantRow(req, c.workerId, taken, rows), now);
          return ledger.granted(c.workerId, taken, expiresAt);
        })
        .immediate();
    } catch (e) {
      throw wrap(e);
    }
  }

  async renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const db = this.open();
    try {
      return db
        .transaction((): LeaseRecord | undefined => {
          const now = this.now();
          const r = db
            .prepare(
              `UPDATE sequoia_worker_lease SET expires_at = ?, last_tick = MAX(last_tick, ?), updated_at = ? ${HELD} RETURNING last_tick`,
            )
            .get(now + ttlMs, lastTick, now, ...heldValues(lease)) as { last_tick: number } | undefined;
          if (!r) return undefined;
          recordAfter(db, lease, 'renew', r.last_tick, now);
          return { workerId: lease.workerId, generation: lease.generation, lastTick: r.last_tick, expiresAtMs: now + ttlMs };
        })
        .immediate();
    } catch (e) {
      throw wrap(e);
    }
  }

  async release(lease: HeldLease, lastTick: number): Promise<void> {
    const db = this.open();
    try {
      db.transaction(() => {
        const now = this.now();
        const r = db
          .prepare(`UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = ?, updated_at = ? ${HELD}`)
          .run(lastTick, now, ...heldValues(lease));
        if (r.changes === 1) recordAfter(db, lease, 'release', lastTick, now);
      }).immediate();
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
            const id = Number(
              db.prepare('INSERT INTO sequoia_worker_node (space, host, started_at) VALUES (?, ?, ?)').run(space, host, now)
                .lastInsertRowid,
            );
            if (id >= workerCount) return { workerId: id, lastTick: -1 };
            const prev = db.prepare('SELECT expires_at FROM sequoia_worker_lease WHERE space = ? AND worker_id = ?').get(space, id) as
              { expires_at: number } | undefined;
            if (prev && prev.expires_at > now) continue;
            const owner = nodeOwner(host);
            const taken = take(db, space, id, owner, CLAIMED_FOR_GOOD_MS, now);
            record(db, ledger.claimRow(space, id, owner, taken, prev && { expiresAtMs: prev.expires_at }), now);
            return { workerId: id, lastTick: taken.lastTick };
          }
        })
        .immediate();
    } catch (e) {
      throw wrap(e);
    }
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const q = ledger.holdingsQuery(space, workerId);
    return this.select<ledger.HoldingRow>(q.sql, q.values).map(ledger.toHolding);
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return this.select<ledger.EntryRow>(ledger.ENTRIES_QUERY, [space, workerId]).map((r) => ledger.toEntry(space, r));
  }

  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    try {
      return this.open()
        .prepare(
          `DELETE FROM sequoia_lease_ledger WHERE seq IN (
             SELECT seq FROM sequoia_lease_ledger WHERE at_ms < ? AND until_tick < ? ORDER BY seq LIMIT ?)`,
        )
        .run(this.now() - retentionMs, ledger.HELD_FOR_GOOD_TICK, limit).changes;
    } catch (e) {
      throw wrap(e);
    }
  }

  private select<R>(sql: string, values: (string | number)[]): R[] {
    try {
      return this.open()
        .prepare(sql)
        .all(...values) as R[];
    } catch (e) {
      throw wrap(e);
    }
  }

  async close(): Promise<void> {
    if (this.db) this.connection.release();
    this.db = undefined;
  }

  /** Once per operation: the file now at the path (see sqlite-connection.ts). */
  private open(): Database.Database {
    if (!this.db) throw new UnavailableError('STORE_UNAVAILABLE', 'the SQLite lease store is not open');
    this.db = this.connection.current();
    return this.db;
  }
}

/** The lease row while its owner and generation still hold it; values: heldValues. */
const HELD = 'WHERE space = ? AND worker_id = ? AND owner = ? AND generation = ?';
const heldValues = (l: HeldLease): (string | number)[] => [l.space, l.workerId, l.owner, l.generation];

/** Gives the id to `owner` (a new generation), keeping the last tick; inside the caller's transaction. */
function take(db: Database.Database, space: string, workerId: number, owner: string, expiresAt: number, now: number): ledger.Taken {
  const r = db
    .prepare(
      `INSERT INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick, updated_at)
       VALUES (?, ?, ?, 1, ?, -1, ?)
       ON CONFLICT (space, worker_id) DO UPDATE SET owner = excluded.owner, generation = generation + 1,
         expires_at = excluded.expires_at, updated_at = excluded.updated_at
       RETURNING generation, last_tick`,
    )
    .get(space, workerId, owner, expiresAt, now) as { generation: number; last_tick: number };
  return { generation: r.generation, lastTick: r.last_tick };
}

/** One ledger row, in the caller's transaction, at `now` (this machine's clock). */
function record(db: Database.Database, row: ledger.LedgerRow, now: number): void {
  db.prepare(ledger.ledgerInsert('?')).run(...ledger.ledgerValues(row), now);
}

function recordAfter(db: Database.Database, lease: HeldLease, kind: 'renew' | 'release', untilTick: number, now: number): void {
  const latest = db.prepare(ledger.LATEST_QUERY).get(...ledger.latestValues(lease)) as ledger.EntryRow | undefined;
  record(db, ledger.followingRow(lease, kind, untilTick, latest && ledger.toEntry(lease.space, latest)), now);
}

const wrap = (e: unknown) => storeError('SQLite lease store', e);
