/**
 * `sequoia bench pk` on MySQL/MariaDB (InnoDB): a scratch database (CREATE
 * DATABASE without IF NOT EXISTS: it fails when the name is taken, so the
 * database this run drops is one it made) holding a marker table and one table
 * per kind of key. Redo bytes from the InnoDB LSN (MariaDB `Innodb_lsn_current`,
 * MySQL 8.0.30+ `Innodb_redo_log_current_lsn`, else `Innodb_os_log_written`),
 * page splits from INNODB_METRICS `index_page_splits` (enabled for the run when
 * it is off, and switched off again afterwards), sizes from the persistent
 * index statistics after ANALYZE TABLE.
 */
import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { SequoiaError } from '../../core/errors.js';
import type { PkBenchTarget, PkCounters, PkKindSpec, PkRow, PkTableShape, PkTableSize, PkTargetInfo } from '../../ports/pk-bench-target.js';
import * as pk from '../kit/pk-bench/pk-bench-kit.js';
import { storeCallAsync, storeError, storeTarget } from '../kit/connection/store-boundary.js';

const KEY_TYPES: pk.PkKeyTypes = {
  sequence: 'BIGINT NOT NULL AUTO_INCREMENT',
  int64: 'BIGINT NOT NULL',
  uuid: 'BINARY(16) NOT NULL',
  text: (length) => `CHAR(${length}) CHARACTER SET ascii COLLATE ascii_bin NOT NULL`,
};

const BACKEND = 'bench pk (MySQL)';
const LSN_STATUS = ['Innodb_lsn_current', 'Innodb_redo_log_current_lsn', 'Innodb_os_log_written'];

export interface MysqlPkBenchOptions {
  readonly uri: string;
  readonly scratch: string;
  readonly concurrency: number;
}

export class MysqlPkBenchTarget implements PkBenchTarget {
  private readonly pool: Pool;
  private readonly scratch: string;
  private readonly runId = pk.newRunId();
  private readonly target: string | undefined;
  private created = false;
  private enabledSplits = false;
  private splitsReadable = false;
  private lsnName: string | undefined;
  private pageSize = 16384;
  private readonly tables = new Set<string>();

  constructor(options: MysqlPkBenchOptions) {
    this.scratch = pk.checkScratchName(options.scratch);
    this.target = storeTarget(options.uri, 3306);
    this.pool = mysql.createPool({
      uri: options.uri,
      connectionLimit: options.concurrency + 1,
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectTimeout: 5000,
    });
    this.pool.on('connection', (conn) => {
      const target = ((conn as { connection?: unknown }).connection ?? conn) as { on?: (e: string, f: () => void) => void };
      target.on?.('error', () => {});
    });
  }

  private async q<T = RowDataPacket>(sql: string, values?: unknown[]): Promise<T[]> {
    return storeCallAsync(BACKEND, async () => (await this.pool.query(sql, values))[0] as T[], this.target);
  }

  private get d(): string {
    return `\`${this.scratch}\``;
  }

  private async marker(): Promise<pk.PkMarker | undefined> {
    const t = await this.q('SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [
      this.scratch,
      pk.PK_MARKER_TABLE,
    ]);
    if (t.length === 0) return undefined;
    return (await this.q<pk.PkMarker>(`SELECT tool, run_id FROM ${this.d}.${pk.PK_MARKER_TABLE} LIMIT 1`))[0];
  }

  async createScratch(): Promise<PkTargetInfo> {
    try {
      await this.pool.query(`CREATE DATABASE ${this.d}`);
    } catch (e) {
      if ((e as { errno?: number }).errno === 1007)
        throw pk.refuseExisting(`MySQL database ${this.scratch}`, (await this.marker())?.tool === pk.PK_MARKER_TOOL);
      throw storeError(BACKEND, e, this.target);
    }
    this.created = true;
    await this.q(
      `CREATE TABLE ${this.d}.${pk.PK_MARKER_TABLE} (tool VARCHAR(64) NOT NULL, run_id VARCHAR(128) NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB`,
    );
    await this.q(`INSERT INTO ${this.d}.${pk.PK_MARKER_TABLE} (tool, run_id) VALUES (?, ?)`, [pk.PK_MARKER_TOOL, this.runId]);

    const notes: string[] = [];
    const status = await this.q<{ Variable_name: string; Value: string }>(
      `SHOW GLOBAL STATUS WHERE Variable_name IN (${LSN_STATUS.map(() => '?').join(',')})`,
      LSN_STATUS,
    );
    this.lsnName = LSN_STATUS.find((n) => status.some((s) => s.Variable_name === n));
    if (this.lsnName === undefined) notes.push('redo bytes: no InnoDB LSN counter readable');
    else notes.push(`redo bytes: global status ${this.lsnName}, server-wide, so other sessions writing at the same time add to it`);

    const metric = await this.q<Record<string, unknown>>(
      "SELECT * FROM information_schema.INNODB_METRICS WHERE NAME = 'index_page_splits'",
    );
    if (metric.length === 0) notes.push('page splits: INNODB_METRICS has no index_page_splits');
    else {
      const m = metric[0]!;
      const on = m.ENABLED !== undefined ? Number(m.ENABLED) === 1 : String(m.STATUS).toLowerCase() === 'enabled';
      if (!on) {
        try {
          await this.pool.query("SET GLOBAL innodb_monitor_enable = 'index_page_splits'");
          this.enabledSplits = true;
          notes.push('page splits: index_page_splits was off; enabled for the run and switched off afterwards');
        } catch {
          notes.push(
            'page splits: index_page_splits is off and this user may not enable it (SET GLOBAL innodb_monitor_enable needs SUPER or SYSTEM_VARIABLES_ADMIN)',
          );
        }
      }
      this.splitsReadable = on || this.enabledSplits;
      if (this.splitsReadable) notes.push('page splits: index_page_splits is server-wide');
    }
    const [v] = await this.q<Record<string, string | number>>(
      `SELECT @@version AS version, @@innodb_buffer_pool_size AS innodb_buffer_pool_size, @@innodb_flush_log_at_trx_commit AS innodb_flush_log_at_trx_commit,
              @@innodb_log_file_size AS innodb_log_file_size, @@innodb_page_size AS innodb_page_size, @@log_bin AS log_bin`,
    );
    const { version, ...rest } = v!;
    this.pageSize = Number(rest.innodb_page_size) || 16384;
    const settings = Object.fromEntries(Object.entries(rest).map(([k, x]) => [k, String(x)]));
    return {
      engine: 'mysql',
      version: /mariadb/i.test(String(version)) ? `MariaDB ${version}` : `MySQL ${version}`,
      scratch: `database ${this.scratch}`,
      settings,
      notes,
      maxConcurrency: 64,
    };
  }

  async createTable(kind: PkKindSpec, shape: PkTableShape): Promise<string> {
    const type = pk.keyColumnType(kind, KEY_TYPES);
    const cols = pk.intColumns(shape);
    const name = pk.pkTableName(kind);
    this.tables.add(name);
    await this.q(
      `CREATE TABLE ${this.d}.${name} (id ${type}, ${cols.map((k) => `${k} INT NOT NULL`).join(', ')}${cols.length ? ', ' : ''}` +
        `payload VARCHAR(${shape.width}) CHARACTER SET ascii NOT NULL, PRIMARY KEY (id)${cols.map((k) => `, KEY ${k} (${k})`).join('')}) ENGINE=InnoDB`,
    );
    return type.replace(/ NOT NULL.*$/, '').replace(/ CHARACTER SET ascii COLLATE ascii_bin/, ' ascii');
  }

  async insert(kind: PkKindSpec, rows: readonly PkRow[]): Promise<void> {
    if (rows.length === 0) return;
    const withKey = kind.keyType !== 'sequence';
    const cols = [...(withKey ? ['id'] : []), ...rows[0]!.ints.map((_, i) => `k${i + 1}`), 'payload'];
    const values: unknown[] = [];
    for (const row of rows) {
      const r: unknown[] = [];
      if (withKey) r.push(row.key instanceof Uint8Array ? Buffer.from(row.key.buffer, row.key.byteOffset, row.key.byteLength) : row.key);
      for (const v of row.ints) r.push(v);
      r.push(row.payload);
      values.push(r);
    }
    await this.q(`INSERT INTO ${this.d}.${pk.pkTableName(kind)} (${cols.join(',')}) VALUES ?`, [values]);
  }

  async counters(): Promise<PkCounters> {
    let logBytes: number | null = null;
    if (this.lsnName) {
      const [r] = await this.q<{ Value: string }>('SHOW GLOBAL STATUS WHERE Variable_name = ?', [this.lsnName]);
      logBytes = r ? Number(r.Value) : null;
    }
    let pageSplits: number | null = null;
    if (this.splitsReadable) {
      const [r] = await this.q<{ c: string }>("SELECT COUNT AS c FROM information_schema.INNODB_METRICS WHERE NAME = 'index_page_splits'");
      pageSplits = r ? Number(r.c) : null;
    }
    return { logBytes, pageSplits };
  }

  async size(kind: PkKindSpec): Promise<PkTableSize> {
    const name = pk.pkTableName(kind);
    await this.q(`ANALYZE TABLE ${this.d}.${name}`);
    const stats = await this.q<{ index_name: string; pages: string }>(
      "SELECT index_name, stat_value AS pages FROM mysql.innodb_index_stats WHERE database_name = ? AND table_name = ? AND stat_name = 'size'",
      [this.scratch, name],
    ).catch(() => []);
    if (stats.length > 0) {
      let tableBytes = 0;
      let indexBytes = 0;
      for (const s of stats) {
        if (s.index_name === 'PRIMARY') tableBytes += Number(s.pages) * this.pageSize;
        else indexBytes += Number(s.pages) * this.pageSize;
      }
      return { tableBytes, indexBytes };
    }
    const [t] = await this.q<{ d: string; i: string }>(
      'SELECT DATA_LENGTH AS d, INDEX_LENGTH AS i FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
      [this.scratch, name],
    );
    return { tableBytes: Number(t?.d ?? 0), indexBytes: Number(t?.i ?? 0) };
  }

  async dropScratch(): Promise<void> {
    if (!this.created) return;
    this.created = false;
    try {
      const m = await this.marker();
      if (m?.run_id !== this.runId)
        throw new SequoiaError('INTERNAL', `database ${this.scratch} no longer carries this run's marker: left untouched`);
      await this.dropOwn([...this.tables]);
    } finally {
      if (this.enabledSplits) {
        this.enabledSplits = false;
        await this.pool.query("SET GLOBAL innodb_monitor_disable = 'index_page_splits'").catch(() => {});
      }
    }
  }

  /** Drops the kind tables named and the marker; the database only when nothing else is left in it. */
  private async dropOwn(tables: readonly string[]): Promise<void> {
    for (const t of tables) await this.q(`DROP TABLE IF EXISTS ${this.d}.${t}`);
    const others = await this.q<{ n: string }>(
      'SELECT TABLE_NAME AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME <> ?',
      [this.scratch, pk.PK_MARKER_TABLE],
    );
    if (others.length > 0) {
      throw new SequoiaError(
        'INTERNAL',
        `database ${this.scratch} holds tables this tool did not create (${others.map((o) => o.n).join(', ')}): its own tables are dropped, the database is left`,
      );
    }
    await this.q(`DROP DATABASE ${this.d}`);
  }

  async dropLeftover(): Promise<string> {
    const what = `MySQL database ${this.scratch}`;
    const run = await pk.dropLeftover(what, {
      exists: async () => (await this.q('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [this.scratch])).length > 0,
      marker: () => this.marker(),
      drop: async () => {
        const found = await this.q<{ n: string }>('SELECT TABLE_NAME AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [
          this.scratch,
        ]);
        await this.dropOwn(pk.kindTables(found.map((r) => r.n)));
      },
    });
    return `dropped ${what} (left by run ${run})`;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}
