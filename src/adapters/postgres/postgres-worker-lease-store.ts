/**
 * Worker-id leases on PostgreSQL. `acquire` runs in one transaction under
 * `pg_advisory_xact_lock` keyed by the space, so concurrent starters take ids
 * one at a time; expiry is in the server's clock (`clock_timestamp()`), one
 * clock for every holder whatever machine it runs on. Only parameterised SQL;
 * BIGINTs are read as text. Driver errors become STORE_UNAVAILABLE.
 */
import pg from 'pg';
import { SequoiaError } from '../../core/errors.js';
import type { AcquireRequest, LeaseRecord, LeaseRow, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { chooseWorker } from '../../ports/worker-lease-store.js';
import { storeError, storeTarget } from '../store-errors.js';

const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
/** Advisory-lock namespace for lease acquisition ("SQWL"). */
const LOCK_CLASS = 0x5351574c;

export class PostgresWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'postgres';
  private readonly pool: pg.Pool;
  /** host:port, database: named in every store error. */
  private readonly target: string | undefined;
  private initialised = false;

  constructor(connectionString: string) {
    this.target = storeTarget(connectionString, 5432);
    this.pool = new pg.Pool({ connectionString, max: 3, connectionTimeoutMillis: 3000, idleTimeoutMillis: 30_000, statement_timeout: 5000, keepAlive: true });
    this.pool.on('error', () => {});
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
    });
    this.initialised = true;
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    return this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, req.space]);
      const now = Number(((await c.query(`SELECT ${NOW_MS}::text AS now`)).rows[0] as { now: string }).now);
      const rows = (
        await c.query('SELECT worker_id::text AS w, owner, expires_at::text AS e FROM sequoia_worker_lease WHERE space = $1', [req.space])
      ).rows.map((r: { w: string; owner: string; e: string }): LeaseRow => ({ workerId: Number(r.w), owner: r.owner, expiresAtMs: Number(r.e) }));
      const choice = chooseWorker(rows, now, req);
      if ('refused' in choice) return choice;
      const r = await c.query(
        `INSERT INTO sequoia_worker_lease (space, worker_id, owner, generation, expires_at, last_tick)
         VALUES ($1, $2, $3, 1, $4::bigint, -1)
         ON CONFLICT (space, worker_id) DO UPDATE SET owner = EXCLUDED.owner, generation = sequoia_worker_lease.generation + 1,
           expires_at = EXCLUDED.expires_at, updated_at = now()
         RETURNING generation::text AS g, last_tick::text AS t`,
        [req.space, choice.workerId, req.owner, String(now + req.ttlMs)],
      );
      const row = r.rows[0] as { g: string; t: string };
      return { workerId: choice.workerId, generation: Number(row.g), lastTick: Number(row.t), expiresAtMs: now + req.ttlMs };
    });
  }

  async renew(space: string, workerId: number, owner: string, generation: number, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const r = await this.q(
      `UPDATE sequoia_worker_lease SET expires_at = ${NOW_MS} + $5::bigint, last_tick = GREATEST(last_tick, $6::bigint), updated_at = now()
       WHERE space = $1 AND worker_id = $2 AND owner = $3 AND generation = $4
       RETURNING last_tick::text AS t, expires_at::text AS e`,
      [space, workerId, owner, generation, ttlMs, String(lastTick)],
    );
    const row = r.rows[0] as { t: string; e: string } | undefined;
    return row ? { workerId, generation, lastTick: Number(row.t), expiresAtMs: Number(row.e) } : undefined;
  }

  async release(space: string, workerId: number, owner: string, generation: number, lastTick: number): Promise<void> {
    await this.q(
      `UPDATE sequoia_worker_lease SET expires_at = 0, last_tick = $5::bigint, updated_at = now()
       WHERE space = $1 AND worker_id = $2 AND owner = $3 AND generation = $4`,
      [space, workerId, owner, generation, String(lastTick)],
    );
  }

  async registerNode(space: string, host: string): Promise<number> {
    const r = await this.q('INSERT INTO sequoia_worker_node (space, host) VALUES ($1, $2) RETURNING id::text AS id', [space, host]);
    return Number((r.rows[0] as { id: string }).id);
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }

  private async q(text: string, values: unknown[]): Promise<pg.QueryResult> {
    try {
      return await this.pool.query(text, values);
    } catch (e) {
      throw wrap(e, this.target);
    }
  }

  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let c: pg.PoolClient;
    try {
      c = await this.pool.connect();
    } catch (e) {
      throw wrap(e, this.target);
    }
    let failed: unknown;
    try {
      await c.query('BEGIN');
      const r = await fn(c);
      await c.query('COMMIT');
      return r;
    } catch (e) {
      failed = e;
      await c.query('ROLLBACK').catch(() => {});
      throw wrap(e, this.target);
    } finally {
      c.release(failed instanceof Error && !(failed instanceof SequoiaError) ? failed : undefined);
    }
  }
}

const wrap = (e: unknown, target: string | undefined) => storeError('PostgreSQL lease store', e, target);
