/**
 * `sequoia bench pk` on PostgreSQL: a scratch schema made in one transaction
 * with its marker table and comment (CREATE SCHEMA without IF NOT EXISTS: it
 * fails when the name is taken, so the schema this run drops is one it made),
 * one table per kind of key, WAL bytes from pg_current_wal_lsn(), sizes from
 * pg_table_size / pg_indexes_size. PostgreSQL counts no page splits.
 */
import pg from 'pg';
import { SequoiaError } from '../../core/errors.js';
import { formatUuid } from '../../core/uuid/uuid-text.js';
import type { PkBenchTarget, PkCounters, PkKindSpec, PkRow, PkTableShape, PkTableSize, PkTargetInfo } from '../../ports/pk-bench-target.js';
import * as pk from '../kit/pk-bench/pk-bench-kit.js';
import { storeCallAsync, storeError, storeTarget } from '../kit/connection/store-boundary.js';

const KEY_TYPES: pk.PkKeyTypes = { sequence: 'bigint GENERATED ALWAYS AS IDENTITY', int64: 'bigint', uuid: 'uuid', text: () => 'text' };

const BACKEND = 'bench pk (PostgreSQL)';

export interface PostgresPkBenchOptions {
  readonly connectionString: string;
  readonly scratch: string;
  readonly concurrency: number;
}

export class PostgresPkBenchTarget implements PkBenchTarget {
  private readonly pool: pg.Pool;
  private readonly scratch: string;
  private readonly runId = pk.newRunId();
  private readonly target: string | undefined;
  private created = false;
  private readonly tables = new Set<string>();
  private readonly insertText = new Map<string, string>();

  constructor(options: PostgresPkBenchOptions) {
    this.scratch = pk.checkScratchName(options.scratch);
    this.target = storeTarget(options.connectionString, 5432);
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: options.concurrency + 1, connectionTimeoutMillis: 5000 });
    this.pool.on('error', () => {});
  }

  private async q<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]> {
    return storeCallAsync(BACKEND, async () => (await this.pool.query(text, values)).rows as T[], this.target);
  }

  private get s(): string {
    return `"${this.scratch}"`;
  }

  /** The marker's tool and run id, or undefined when the schema or its marker table is absent. */
  private async marker(): Promise<pk.PkMarker | undefined> {
    const exists = await this.q<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`${this.s}.${pk.PK_MARKER_TABLE}`]);
    if (exists[0]?.t == null) return undefined;
    return (await this.q<pk.PkMarker>(`SELECT tool, run_id FROM ${this.s}.${pk.PK_MARKER_TABLE} LIMIT 1`))[0];
  }

  async createScratch(): Promise<PkTargetInfo> {
    const c = await this.pool.connect().catch((e: unknown) => {
      throw storeError(BACKEND, e, this.target);
    });
    try {
      await c.query('BEGIN');
      await c.query(`CREATE SCHEMA ${this.s}`);
      await c.query(
        `CREATE TABLE ${this.s}.${pk.PK_MARKER_TABLE} (tool text NOT NULL, run_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
      );
      await c.query(`INSERT INTO ${this.s}.${pk.PK_MARKER_TABLE} (tool, run_id) VALUES ($1, $2)`, [pk.PK_MARKER_TOOL, this.runId]);
      await c.query(`COMMENT ON SCHEMA ${this.s} IS 'scratch schema of ${pk.PK_MARKER_TOOL} run ${this.runId}: dropped when the run ends'`);
      await c.query('COMMIT');
      this.created = true;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      if ((e as { code?: string }).code === '42P06') {
        throw pk.refuseExisting(`PostgreSQL schema ${this.scratch}`, (await this.marker())?.tool === pk.PK_MARKER_TOOL);
      }
      throw storeError(BACKEND, e, this.target);
    } finally {
      c.release();
    }
    const [v] = await this.q<Record<string, string>>(
      `SELECT current_setting('server_version') AS version, current_setting('shared_buffers') AS shared_buffers,
              current_setting('synchronous_commit') AS synchronous_commit, current_setting('full_page_writes') AS full_page_writes,
              current_setting('wal_level') AS wal_level, current_setting('max_wal_size') AS max_wal_size,
              current_setting('checkpoint_timeout') AS checkpoint_timeout, current_setting('block_size') AS block_size`,
    );
    const { version, ...settings } = v!;
    return {
      engine: 'postgresql',
      version: `PostgreSQL ${version}`,
      scratch: `schema ${this.scratch}`,
      settings,
      notes: [
        'page splits: PostgreSQL keeps no counter of B-tree page splits',
        'WAL bytes: pg_current_wal_lsn() is server-wide, so other sessions writing at the same time add to it',
      ],
      maxConcurrency: 64,
    };
  }

  async createTable(kind: PkKindSpec, shape: PkTableShape): Promise<string> {
    const t = `${this.s}.${pk.pkTableName(kind)}`;
    const type = pk.keyColumnType(kind, KEY_TYPES);
    const ints = pk.intColumns(shape).map((k) => `${k} integer NOT NULL`);
    this.tables.add(pk.pkTableName(kind));
    await this.q(`CREATE TABLE ${t} (id ${type} PRIMARY KEY, ${[...ints, 'payload text NOT NULL'].join(', ')})`);
    for (const k of pk.intColumns(shape)) await this.q(`CREATE INDEX ${pk.pkTableName(kind)}_${k} ON ${t} (${k})`);
    return type;
  }

  async insert(kind: PkKindSpec, rows: readonly PkRow[]): Promise<void> {
    if (rows.length === 0) return;
    const withKey = kind.keyType !== 'sequence';
    const perRow = (withKey ? 1 : 0) + rows[0]!.ints.length + 1;
    const cacheKey = `${kind.name}/${rows.length}/${perRow}`;
    let text = this.insertText.get(cacheKey);
    if (text === undefined) {
      const cols = [...(withKey ? ['id'] : []), ...rows[0]!.ints.map((_, i) => `k${i + 1}`), 'payload'];
      const tuples: string[] = [];
      for (let r = 0; r < rows.length; r++) tuples.push(`(${cols.map((_, c) => `$${r * perRow + c + 1}`).join(',')})`);
      text = `INSERT INTO ${this.s}.${pk.pkTableName(kind)} (${cols.join(',')}) VALUES ${tuples.join(',')}`;
      this.insertText.set(cacheKey, text);
    }
    const values: unknown[] = [];
    for (const row of rows) {
      if (withKey) values.push(row.key instanceof Uint8Array ? formatUuid(row.key) : row.key);
      for (const v of row.ints) values.push(v);
      values.push(row.payload);
    }
    await this.q(text, values);
  }

  async counters(): Promise<PkCounters> {
    const [r] = await this.q<{ lsn: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS lsn");
    return { logBytes: Number(r!.lsn), pageSplits: null };
  }

  async size(kind: PkKindSpec): Promise<PkTableSize> {
    const [r] = await this.q<{ t: string; i: string }>(
      'SELECT pg_table_size($1::regclass)::text AS t, pg_indexes_size($1::regclass)::text AS i',
      [`${this.s}.${pk.pkTableName(kind)}`],
    );
    return { tableBytes: Number(r!.t), indexBytes: Number(r!.i) };
  }

  async dropScratch(): Promise<void> {
    if (!this.created) return;
    const m = await this.marker();
    if (m?.run_id !== this.runId) {
      this.created = false;
      throw new SequoiaError('INTERNAL', `schema ${this.scratch} no longer carries this run's marker: left untouched`);
    }
    await this.dropOwn([...this.tables]);
    this.created = false;
  }

  /** Drops the kind tables named, the marker and the schema (RESTRICT: anything else in it keeps it alive, and is reported). */
  private async dropOwn(tables: readonly string[]): Promise<void> {
    for (const t of tables) await this.q(`DROP TABLE IF EXISTS ${this.s}.${t}`);
    await this.q(`DROP TABLE ${this.s}.${pk.PK_MARKER_TABLE}`);
    try {
      await this.q(`DROP SCHEMA ${this.s} RESTRICT`);
    } catch (e) {
      throw new SequoiaError(
        'INTERNAL',
        `schema ${this.scratch} holds objects this tool did not create: its own tables are dropped, the schema is left`,
        {
          cause: e,
        },
      );
    }
  }

  async dropLeftover(): Promise<string> {
    const what = `PostgreSQL schema ${this.scratch}`;
    const run = await pk.dropLeftover(what, {
      exists: async () => (await this.q('SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.scratch])).length > 0,
      marker: () => this.marker(),
      drop: async () => {
        const found = await this.q<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = $1', [this.scratch]);
        await this.dropOwn(pk.kindTables(found.map((r) => r.t)));
      },
    });
    return `dropped ${what} (left by run ${run})`;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}
