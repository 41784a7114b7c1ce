/**
 * Worker-id leases on PostgreSQL. `acquire` and `registerNode` each run in
 * one transaction under `pg_advisory_xact_lock` keyed by the space, so
 * concurrent starters take ids one at a time; expiry is in the server's clock (`clock_timestamp()`), one
 * clock for every holder whatever machine it runs on. Only parameterised SQL;
 * BIGINTs are read as text. Driver errors become STORE_UNAVAILABLE. Every
 * lease change writes its row of the lease ledger (`sequoia_lease_ledger`) in
 * the same transaction.
 */
import type { LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import * as ledger from '../kit/lease/lease-ledger-rules.js';
import { type PgClientLike, type PgPoolLike, PostgresConnection } from './postgres-connection.js';

const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
/** Advisory-lock namespace for lease acquisition ("SQWL"). */
const LOCK_CLASS = 0x5351574c;

export class PostgresWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'postgres';
  private readonly connection: PostgresConnection;
  private readonly pool: PgPoolLike;
  private initialised = false;
  private closed = false;

  /** A connection string opens a pool of its own; a connection is shared with the segment store. */
  constructor(connection: string | PostgresConnection) {
    this.connection = (
      typeof connection === 'string' ? new PostgresConnection({ connectionString: connection, maxConnections: 3 }) : connection
    ).retain();
    this.pool = this.connection.pool;
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK_CLASS]);
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_worker_lease (
        space TEXT NOT NULL,
        worker_id BIGINT NOT NULL,
        owner TEXT NOT NULL,
        generation BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        last_tick BIGINT NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (space, worker_id)
      )`);
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_worker_node (
        id BIGSERIAL PRIMARY KEY,
        space TEXT NOT NULL,
        host TEXT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL DEFAULT now()
      )`);
      await c.query(`CREATE TABLE IF NOT EXISTS sequoia_lease_ledger (
        seq BIGSERIAL PRIMARY KEY,
        space TEXT NOT NULL,
        worker_id BIGINT NOT NULL,
        generation BIGINT NOT NULL,
        kind TEXT NOT NULL,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid BIGINT NOT NULL,
        instance TEXT NOT NULL,
        version TEXT NOT NULL,
        from_tick BIGINT NOT NULL,
        until_tick BIGINT NOT NULL,
        at_ms BIGINT NOT NULL
      )`);
      await c.query('CREATE INDEX IF NOT EXISTS sequoia_lease_ledger_holding ON sequoia_lease_ledger (space, worker_id, generation)');
      await c.query('CREATE INDEX IF NOT EXISTS sequoia_lease_ledger_at ON sequoia_lease_ledger (at_ms)');
    });
    this.initialised = true;
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    return this.tx(async (c) => {
      await lockSpace(c, req.space);
      const now = Number(((await c.query(`SELECT ${NOW_MS}::text AS now`)).rows[0] as { now: string }).now);
      const rows = (
        (await c.query('SELECT worker_id::text AS w, owner, expires_at::text AS e FROM sequoia_worker_lease WHERE space = $1', [req.space]))
          .rows as { w: string; owner: string; e: string }[]
      ).map((r): LeaseRow => ({ workerId: Number(r.w), owner: r.owner, expiresAtMs: Number(r.e) }));
      return ledger.grantFrom(rows, now, req, statements(c, req.space));
    });
  }

  async renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    return this.tx(async (c) => {
      const r = await c.query(
        `UPDATE sequoia_worker_lease SET expires_at = ${NOW_MS} + $5::bigint, last_tick = GREATEST(last_tick, $6::bigint), updated_at = now()
         ${HELD} RETURNING last_tick::text AS t, expires_at::text AS e`,
        [...heldValues(lease), ttlMs, String(lastTick)],
      );
      const row = r.rows[0] as { t: string; e: string } | undefined;
      if (!row) return undefined;
      await recordAfter(c, lease, 'renew', Number(row.t));
      return { workerId: lease.workerId, generation: lease.generation, lastTick: Number(row.t), expiresAtMs: Number(row.e) };
    });
  }

  async release(lease: HeldLease, lastTick: number): Promise<void> {
    await this.tx(async (c) => {
      const r = await c.query(`UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = $5::bigint, updated_at = now() ${HELD}`, [
        ...heldValues(lease),
        String(lastTick),
      ]);
      if (r.rowCount === 1) await recordAfter(c, lease, 'release', lastTick);
    });
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    return this.tx(async (c) => {
      await lockSpace(c, space);
      return ledger.registerNodeWith(space, host, workerCount, {
        ...statements(c, space),
        insertNode: async () => {
          const r = await c.query('INSERT INTO sequoia_worker_node (space, host) VALUES ($1, $2) RETURNING id::text AS id', [space, host]);
          return Number((r.rows[0] as { id: string }).id);
        },
        leaseOf: async (id) => {
          const r = await c.query(
            `SELECT expires_at::text AS e, (expires_at > ${NOW_MS}) AS live FROM sequoia_worker_lease WHERE space = $1 AND worker_id = $2`,
            [space, id],
          );
          const p = r.rows[0] as { e: string; live: boolean } | undefined;
          return p && { expiresAtMs: Number(p.e), live: p.live };
        },
      });
    });
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const q = ledger.holdingsQuery(space, workerId);
    return ((await this.q(numbered(q.sql), q.values)).rows as ledger.HoldingRow[]).map(ledger.toHolding);
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    const r = await this.q(numbered(ledger.ENTRIES_QUERY), [space, workerId]);
    return (r.rows as ledger.EntryRow[]).map((row) => ledger.toEntry(space, row));
  }

  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    const r = await this.q(
      `DELETE FROM sequoia_lease_ledger WHERE seq IN (
         SELECT seq FROM sequoia_lease_ledger WHERE at_ms < ${NOW_MS} - $1::bigint AND until_tick < $2::bigint ORDER BY seq LIMIT $3)`,
      [String(retentionMs), String(ledger.HELD_FOR_GOOD_TICK), limit],
    );
    return r.rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection.release();
  }

  private q(text: string, values: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
    return this.connection.query(BACKEND, text, values);
  }

  private tx<T>(fn: (c: PgClientLike) => Promise<T>): Promise<T> {
    return this.connection.transaction(BACKEND, fn);
  }
}

const BACKEND = 'PostgreSQL lease store';

/** Takes ids in the space one transaction at a time. */
async function lockSpace(c: PgClientLike, space: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, space]);
}

/** The lease row while its owner and generation still hold it ($1–$4: heldValues). */
const HELD = 'WHERE space = $1 AND worker_id = $2 AND owner = $3 AND generation = $4';
const heldValues = (l: HeldLease): (string | number)[] => [l.space, l.workerId, l.owner, l.generation];

/** The shared ledger SQL (written with `?`) with PostgreSQL's numbered parameters. */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** The writes of a take, in the caller's transaction. */
function statements(c: PgClientLike, space: string): ledger.TakeStatements {
  return { take: (workerId, owner, expiresAt) => take(c, space, workerId, owner, expiresAt), record: (row) => record(c, row) };
}

async function take(c: PgClientLike, space: string, workerId: number, owner: string, expiresAt: number): Promise<ledger.Taken> {
  const r = await c.query(
    `INSERT INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick)
     VALUES ($1, $2, $3, 1, $4::bigint, -1)
     ON CONFLICT (space, worker_id) DO UPDATE SET owner = EXCLUDED.owner, generation = sequoia_worker_lease.generation + 1,
       expires_at = EXCLUDED.expires_at, updated_at = now()
     RETURNING generation::text AS g, last_tick::text AS t`,
    [space, workerId, owner, String(expiresAt)],
  );
  const row = r.rows[0] as { g: string; t: string };
  return { generation: Number(row.g), lastTick: Number(row.t) };
}

/** One ledger row, in the caller's transaction. */
async function record(c: PgClientLike, row: ledger.LedgerRow): Promise<void> {
  await c.query(numbered(ledger.ledgerInsert(NOW_MS)), ledger.ledgerValues(row));
}

async function recordAfter(c: PgClientLike, lease: HeldLease, kind: 'renew' | 'release', untilTick: number): Promise<void> {
  const r = await c.query(numbered(ledger.LATEST_QUERY), ledger.latestValues(lease));
  const latest = r.rows[0] as ledger.EntryRow | undefined;
  await record(c, ledger.followingRow(lease, kind, untilTick, latest && ledger.toEntry(lease.space, latest)));
}
