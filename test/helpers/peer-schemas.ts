/**
 * The old ID servers whose tables Sequoia serves from (`?schema=leaf`,
 * `?schema=tinyid`), described once for the tests that run Sequoia beside
 * them on real PostgreSQL and MariaDB: each peer's table and the row its
 * admins insert, its stand-in process, and what only it promises (Tinyid's
 * delta/remainder).
 */
import { BIN, launchServe, type ServerProcess } from './cli.js';
import { leafDdlMysql, leafDdlPostgres } from './leaf-standin.js';
import type { SqlDatabase } from './sql-databases.js';
import { tinyidDdlMysql, tinyidDdlPostgres, tinyidRowSql } from './tinyid-standin.js';

/** A row as a peer's admin inserts it; maxId defaults to the peer's DDL default. */
export interface PeerRow {
  readonly tag: string;
  readonly step: number;
  readonly maxId?: bigint;
  readonly description?: string;
  /** Tinyid only: every ID ≡ remainder (mod delta). */
  readonly delta?: number;
  readonly remainder?: number;
}

export interface PeerSchema {
  readonly name: 'leaf' | 'tinyid';
  readonly title: 'Leaf' | 'Tinyid';
  /** The table as the peer ships it. */
  readonly table: 'leaf_alloc' | 'tiny_id_info';
  readonly key: 'biz_tag' | 'biz_type';
  /** The peer table's columns, in order: Sequoia adds none. */
  readonly columns: readonly string[];
  /** `binary` makes the key case-sensitive on MySQL, as Sequoia's tags are. */
  readonly ddl: (db: SqlDatabase['name'], table: string, options?: { binary?: boolean }) => string;
  readonly insertRow: (table: string, row: PeerRow) => string;
  readonly standIn: 'leaf-standin-main' | 'tinyid-standin-main';
  /** The side table Sequoia's store keeps when none is named in the URL, and its column naming the peer table. */
  readonly sideState: { readonly table: string; readonly column: string };
  /** The row the side-by-side test shares between the peer's stand-ins and Sequoia's servers. */
  readonly sideBySide: {
    readonly row: PeerRow;
    /** The peer's clients also reach Sequoia through Leaf's own route. */
    readonly leafRoute: boolean;
  };
}

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;

export const LEAF: PeerSchema = {
  name: 'leaf',
  title: 'Leaf',
  table: 'leaf_alloc',
  key: 'biz_tag',
  columns: ['biz_tag', 'max_id', 'step', 'description', 'update_time'],
  ddl: (db, table, options) => (db === 'postgres' ? leafDdlPostgres(table) : leafDdlMysql(table, options)),
  insertRow: (table, r) => {
    if (r.delta !== undefined || r.remainder !== undefined) throw new Error('a Leaf row has no delta or remainder');
    // as Leaf's README tells its admins to add a tag
    return `INSERT INTO ${table} (biz_tag, max_id, step, description) VALUES (${quote(r.tag)}, ${r.maxId ?? 1n}, ${r.step}, ${quote(r.description ?? '')})`;
  },
  standIn: 'leaf-standin-main',
  sideState: { table: 'sequoia_leaf_state', column: 'leaf_table' },
  sideBySide: { row: { tag: 'order:pay', maxId: 1n, step: 20, description: 'side by side' }, leafRoute: true },
};

export const TINYID: PeerSchema = {
  name: 'tinyid',
  title: 'Tinyid',
  table: 'tiny_id_info',
  key: 'biz_type',
  columns: ['id', 'biz_type', 'begin_id', 'max_id', 'step', 'delta', 'remainder', 'create_time', 'update_time', 'version'],
  ddl: (db, table, options) => (db === 'postgres' ? tinyidDdlPostgres(table) : tinyidDdlMysql(table, options)),
  insertRow: (table, r) => {
    if (r.description !== undefined) throw new Error('a Tinyid row has no description');
    return tinyidRowSql(table, { bizType: r.tag, maxId: r.maxId ?? 0n, step: r.step, delta: r.delta, remainder: r.remainder });
  },
  standIn: 'tinyid-standin-main',
  sideState: { table: 'sequoia_tinyid_state', column: 'source_table' },
  sideBySide: { row: { tag: 'test_odd', maxId: 1n, step: 60, delta: 3, remainder: 2 }, leafRoute: false },
};

export const PEERS: readonly PeerSchema[] = [LEAF, TINYID];

/** The URL of a store on a peer's table. */
export function peerStoreUrl(dbUrl: string, peer: PeerSchema, params: Record<string, string>): string {
  const u = new URL(dbUrl);
  u.searchParams.set('schema', peer.name);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

/** Sorted half-open intervals; throws naming the first pair that overlaps. */
export function expectNoOverlap(ranges: Array<[bigint, bigint]>): void {
  const sorted = [...ranges].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1] as [bigint, bigint];
    const cur = sorted[i] as [bigint, bigint];
    if (cur[0] < prev[1]) throw new Error(`repeat: [${prev[0]}, ${prev[1]}) and [${cur[0]}, ${cur[1]}) overlap`);
  }
}

/**
 * `sequoia serve` on a store with small segments (`--max-step 64`, so the
 * peer and Sequoia take turns on the row often), tracked in `servers` until it
 * exits so that an afterAll can kill what is left.
 */
export async function serveBeside(store: string, stateDir: string, servers: Set<ServerProcess>): Promise<ServerProcess> {
  // A start takes ~15 s on a loaded 2-core machine: more than startServe's default wait.
  const s = await launchServe(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--store', store, '--state-dir', stateDir, '--max-step', '64', '--shutdown-timeout-ms', '2000'],
    { env: { SEQUOIA_WORKERS: '1' }, startTimeoutMs: 60_000 },
  );
  servers.add(s);
  void s.exited.then(() => servers.delete(s));
  return s;
}
