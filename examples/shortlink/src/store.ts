/**
 * The two tables of the seed article, in PostgreSQL:
 * - short_link: one row per link; its ID is the Sequoia ID, the code is
 *   derived from it, and request_key is unique so one creation intent makes
 *   at most one link;
 * - request_result: what a request key produced, written in the same
 *   transaction as the link, so a key is either fully done or not at all.
 */
import type pg from 'pg';
import { isUniqueViolation } from 'sequoia-id/client';

export interface Link {
  readonly code: string;
  readonly url: string;
  readonly createdAt: Date;
}

/** The outcome of one attempt to create a link. */
export type CreateResult =
  | { kind: 'created'; link: Link }
  /** Another request with the same key committed first (or this one's commit answer was lost): read it by key. */
  | { kind: 'key-taken' }
  /** The ID (or its code) is already in the table: the ID was issued twice, or someone inserted it by hand. Report it. */
  | { kind: 'id-taken'; constraint: string };

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Errors that say the database could not be reached or the connection broke: the outcome may be unknown. */
export function isConnectionError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    // class 08: connection exception; 57P01-03: the server is shutting down or cannot accept connections.
    if (code.startsWith('08') || /^57P0[1-3]$/.test(code)) return true;
    if (/^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|AI_AGAIN)$/.test(code)) return true;
  }
  const message = e instanceof Error ? e.message : '';
  return /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(message);
}

/** A checked-out connection that breaks emits 'error' besides failing its query; unheard, that event would end the process. */
const ignore = () => undefined;

export class LinkStore {
  private readonly s: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    if (!SCHEMA_NAME.test(schema)) throw new Error(`schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`);
    this.s = `"${schema}"`;
  }

  /** Creates the schema and tables if missing; safe when several instances start at once. */
  async migrate(): Promise<void> {
    const c = await this.pool.connect();
    c.on('error', ignore);
    try {
      await c.query('BEGIN');
      // CREATE ... IF NOT EXISTS still races on the catalog's unique index; one instance at a time.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`shortlink-migrate:${this.s}`]);
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.s}`);
      await c.query(`CREATE TABLE IF NOT EXISTS ${this.s}.short_link (
        id          BIGINT       NOT NULL,
        short_code  VARCHAR(16)  NOT NULL,
        long_url    TEXT         NOT NULL,
        request_key VARCHAR(64)  NOT NULL,
        created_at  TIMESTAMPTZ  NOT NULL DEFAULT now(),
        CONSTRAINT short_link_pk PRIMARY KEY (id),
        CONSTRAINT short_link_code_uk UNIQUE (short_code),
        CONSTRAINT short_link_request_key_uk UNIQUE (request_key)
      )`);
      await c.query(`CREATE TABLE IF NOT EXISTS ${this.s}.request_result (
        request_key VARCHAR(64)  NOT NULL,
        resource_id BIGINT       NOT NULL REFERENCES ${this.s}.short_link (id),
        status      VARCHAR(16)  NOT NULL,
        created_at  TIMESTAMPTZ  NOT NULL DEFAULT now(),
        CONSTRAINT request_result_pk PRIMARY KEY (request_key)
      )`);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.off('error', ignore);
      c.release();
    }
  }

  /** The link a request key produced, if that request committed. */
  async findByKey(key: string): Promise<Link | undefined> {
    const r = await this.pool.query<{ short_code: string; long_url: string; created_at: Date }>(
      `SELECT l.short_code, l.long_url, l.created_at
         FROM ${this.s}.request_result r JOIN ${this.s}.short_link l ON l.id = r.resource_id
        WHERE r.request_key = $1`,
      [key],
    );
    const row = r.rows[0];
    return row && { code: row.short_code, url: row.long_url, createdAt: row.created_at };
  }

  async findByCode(code: string): Promise<Link | undefined> {
    const r = await this.pool.query<{ short_code: string; long_url: string; created_at: Date }>(
      `SELECT short_code, long_url, created_at FROM ${this.s}.short_link WHERE short_code = $1`,
      [code],
    );
    const row = r.rows[0];
    return row && { code: row.short_code, url: row.long_url, createdAt: row.created_at };
  }

  /**
   * Writes the link and the request's result in one transaction. A unique
   * violation on the request key means another request with this key won:
   * the caller reads the winner's link. The ID is then simply not used:
   * nothing here gives it back for reuse, because nothing can prove that no
   * other write is holding it.
   */
  async create(id: bigint, code: string, url: string, key: string): Promise<CreateResult> {
    const c = await this.pool.connect();
    c.on('error', ignore);
    let broken: unknown;
    try {
      await c.query('BEGIN');
      const r = await c.query<{ created_at: Date }>(
        `INSERT INTO ${this.s}.short_link (id, short_code, long_url, request_key) VALUES ($1, $2, $3, $4) RETURNING created_at`,
        [id.toString(), code, url, key],
      );
      await c.query(`INSERT INTO ${this.s}.request_result (request_key, resource_id, status) VALUES ($1, $2, 'SUCCEEDED')`, [key, id.toString()]);
      await c.query('COMMIT');
      return { kind: 'created', link: { code, url, createdAt: r.rows[0]!.created_at } };
    } catch (e) {
      if (isConnectionError(e)) {
        broken = e;
        throw e;
      }
      await c.query('ROLLBACK').catch((re: unknown) => {
        broken = re;
      });
      const constraint = (e as { code?: string; constraint?: string }).code === '23505' ? (e as { constraint?: string }).constraint : undefined;
      if (constraint === 'short_link_request_key_uk' || constraint === 'request_result_pk') return { kind: 'key-taken' };
      if (isUniqueViolation(e)) return { kind: 'id-taken', constraint: constraint ?? 'unique' };
      throw e;
    } finally {
      // A connection that failed mid-transaction is discarded (and may still report its end), never reused.
      if (broken === undefined) c.off('error', ignore);
      c.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error(String(broken)));
    }
  }
}
