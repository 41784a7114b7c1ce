/**
 * The stores on Leaf's own table (`?schema=leaf`): the segment-store contract
 * on PostgreSQL and MariaDB, and what only they promise: Leaf's table gains
 * nothing, Leaf's DAO and Sequoia's store share one row without overlap, the
 * URL selects them, and a missing Leaf table is refused, not created.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MysqlLeafSegmentStore } from '../../src/adapters/mysql/mysql-leaf-segment-store.js';
import { PostgresLeafSegmentStore } from '../../src/adapters/postgres/postgres-leaf-segment-store.js';
import { createStore } from '../../src/app/stores.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { LeafSegmentLoader, leafDdlMysql, leafDdlPostgres, mysqlLeafDao, postgresLeafDao } from '../helpers/leaf-standin.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from './backends.js';
import { type ContractHarness, expectSqlRecreateIsAnotherCreation, idsOf, runSegmentStoreContract } from './segment-store-contract.js';

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

function withoutParams(url: string): string {
  const u = new URL(url);
  u.search = '';
  return u.toString();
}

async function postgresLeafHarness(): Promise<ContractHarness> {
  const table = uniqueName('t_leaf_alloc');
  const side = uniqueName('sq_side');
  const app = uniqueName('sq_app');
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  admin.on('error', () => {});
  await admin.query(leafDdlPostgres(table));
  const make = (url: string, t = table) => new PostgresLeafSegmentStore({ connectionString: url, table: t, sideTable: side });
  const store = make(withParams(POSTGRES_URL, { application_name: app }));
  return {
    noLedger: true,
    store,
    url: withParams(POSTGRES_URL, { schema: 'leaf', table, side }),
    dropConnections: async () =>
      (await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app])).rowCount ?? 0,
    unreachable: () => new PostgresLeafSegmentStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectTimeoutMs: 1000 }),
    withName: (name) => make(POSTGRES_URL, name),
    snapshot: async (tag) => (await admin.query(`SELECT max_id::text AS m FROM ${table} WHERE biz_tag = $1`, [tag])).rows[0]?.m as string,
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${table} SET max_id = $2::bigint WHERE biz_tag = $1`, [tag, snap as string]);
    },
    reopen: async () => make(POSTGRES_URL),
    cleanup: async () => {
      await store.close();
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
      await admin.query(`DROP TABLE IF EXISTS ${side}`);
      await admin.end();
    },
  };
}

async function mysqlLeafHarness(): Promise<ContractHarness> {
  // A database of its own: the server can then be made to drop exactly this store's connections.
  const database = uniqueName('sq_leafdb');
  const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 2, supportBigNumbers: true, bigNumberStrings: true });
  await admin.query(`CREATE DATABASE ${database}`);
  const u = new URL(MYSQL_URL);
  u.pathname = `/${database}`;
  const uri = u.toString();
  await admin.query(leafDdlMysql(`${database}\`.\`t_leaf_alloc`, { binary: true }));
  const make = (t = 't_leaf_alloc') => new MysqlLeafSegmentStore({ uri, table: t });
  const store = make();
  return {
    noLedger: true,
    store,
    url: withParams(uri, { schema: 'leaf', table: 't_leaf_alloc' }),
    dropConnections: async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SELECT id FROM information_schema.PROCESSLIST WHERE db = ?', [database]);
      for (const r of rows) await admin.query(`KILL ${Number(r.id)}`).catch(() => {});
      return rows.length;
    },
    unreachable: () => new MysqlLeafSegmentStore({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeoutMs: 1000 }),
    withName: (name) => make(name),
    snapshot: async (tag) => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT max_id FROM ${database}.t_leaf_alloc WHERE biz_tag = ?`, [tag]);
      return rows[0]?.max_id as string;
    },
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${database}.t_leaf_alloc SET max_id = CAST(? AS SIGNED) WHERE biz_tag = ?`, [snap as string, tag]);
    },
    reopen: async () => make(),
    cleanup: async () => {
      await store.close();
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    },
  };
}

const describePg = await describeWithService('PostgreSQL', probePostgres);
const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);

describePg('postgres leaf_alloc', () => runSegmentStoreContract('postgres ?schema=leaf', postgresLeafHarness));
describeMysql('mysql leaf_alloc', () => runSegmentStoreContract('mysql/mariadb ?schema=leaf', mysqlLeafHarness));

interface Backend {
  readonly name: string;
  readonly describe: typeof describePg;
  readonly harness: () => Promise<ContractHarness>;
  readonly columns: (h: ContractHarness) => Promise<string[]>;
  readonly dao: (h: ContractHarness) => ReturnType<typeof postgresLeafDao>;
  /** A statement as Leaf's admins run it, on the Leaf table (`$table` stands for its name). */
  readonly sql: (h: ContractHarness, text: string) => Promise<void>;
}

const pgColumns = async (table: string): Promise<string[]> => {
  const c = new pg.Client({ connectionString: POSTGRES_URL });
  await c.connect();
  try {
    const r = await c.query('SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position', [table]);
    return r.rows.map((x: { column_name: string }) => x.column_name);
  } finally {
    await c.end();
  }
};
const myColumns = async (uri: string, table: string): Promise<string[]> => {
  const c = await mysql.createConnection({ uri });
  try {
    const [rows] = await c.query<mysql.RowDataPacket[]>(
      'SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
      [table],
    );
    return rows.map((r) => String(r.c));
  } finally {
    await c.end();
  }
};

const BACKENDS: Backend[] = [
  {
    name: 'postgres',
    describe: describePg,
    harness: postgresLeafHarness,
    columns: (h) => pgColumns((h.store as PostgresLeafSegmentStore).table),
    dao: (h) => postgresLeafDao(POSTGRES_URL, (h.store as PostgresLeafSegmentStore).table),
    sql: async (h, text) => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      try {
        await c.query(text.replaceAll('$table', (h.store as PostgresLeafSegmentStore).table));
      } finally {
        await c.end();
      }
    },
  },
  {
    name: 'mariadb',
    describe: describeMysql,
    harness: mysqlLeafHarness,
    columns: (h) => myColumns(withoutParams(h.url as string), 't_leaf_alloc'),
    dao: (h) => mysqlLeafDao(withoutParams(h.url as string), 't_leaf_alloc'),
    sql: async (h, text) => {
      const c = await mysql.createConnection({ uri: withoutParams(h.url as string) });
      try {
        await c.query(text.replaceAll('$table', 't_leaf_alloc'));
      } finally {
        await c.end();
      }
    },
  },
];

for (const b of BACKENDS) {
  b.describe(`${b.name} leaf_alloc: own cases`, () => {
    let h: ContractHarness;
    let store: SegmentStore;
    beforeAll(async () => {
      h = await b.harness();
      store = h.store;
      await store.init();
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("the Leaf table gains no column (Sequoia's state is in its side table)", async () => {
      const t = `cols-${process.pid}`;
      await store.createTag({ tag: t, step: 10 });
      await store.allocate(t);
      await store.fence(t, 1000n);
      expect(await b.columns(h)).toEqual(['biz_tag', 'max_id', 'step', 'description', 'update_time']);
      expect((await store.getTag(t))?.fenceEpoch).toBe(1);
    });

    it("Leaf's DAO (with its dynamic step) and Sequoia's store interleave on one row without overlap", async () => {
      const t = `mix-${process.pid}`;
      await store.createTag({ tag: t, step: 7, start: 1n });
      const dao = b.dao(h);
      const seen = new Set<string>();
      let total = 0;
      const add = (start: bigint, max: bigint) => {
        for (let v = start; v < max; v++) seen.add(v.toString());
        total += Number(max - start);
      };
      try {
        const loaders = [new LeafSegmentLoader(dao, t), new LeafSegmentLoader(dao, t)];
        await Promise.all([
          ...loaders.map(async (l) => {
            for (let i = 0; i < 12; i++) {
              const s = await l.load();
              add(s.start, s.max);
            }
          }),
          ...[undefined, 3, 50].map(async (step) => {
            for (let i = 0; i < 12; i++) {
              const a = await store.allocate(t, step);
              const ids = idsOf(a);
              add(ids[0] as bigint, (ids[ids.length - 1] as bigint) + 1n);
            }
          }),
        ]);
      } finally {
        await dao.close();
      }
      expect(seen.size).toBe(total);
      // dense: every ID from the start to max_id was handed out exactly once
      expect(BigInt(total) + 1n).toBe((await store.getTag(t))?.maxId);
    });

    it("a row deleted with `tag delete` and inserted again with Leaf's SQL is another creation: an old give-back cannot land in it", async () => {
      // Leaf's admins create tags with an INSERT, which Sequoia cannot see; its own delete is what renews the generation.
      await expectSqlRecreateIsAnotherCreation(
        store,
        (t) => b.sql(h, `INSERT INTO $table (biz_tag, max_id, step, description) VALUES ('${t}', 1, 10, '')`),
        'leaf-sql',
      );
    });

    it('is selected by the store URL (?schema=leaf&table=…), and bad parameters are refused', async () => {
      const s = await createStore(h.url as string);
      try {
        expect(s.kind).toMatch(/-leaf$/);
        await s.init();
        const t = `url-${process.pid}`;
        await store.createTag({ tag: t, step: 5, start: 100n });
        expect((await s.allocate(t)).maxId).toBe(105n);
      } finally {
        await s.close();
      }
      const bad = new URL(h.url as string);
      bad.searchParams.set('schema', 'tinyid-ish');
      await expect(createStore(bad.toString())).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: /schema must be sequoia, leaf or tinyid/,
      });
    });

    it('refuses to start on a missing Leaf table, naming it, and creates nothing', async () => {
      const url = new URL(h.url as string);
      url.searchParams.set('table', 'no_such_leaf_table');
      const s = await createStore(url.toString());
      try {
        await expect(s.init()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: /no_such_leaf_table not found/ });
      } finally {
        await s.close();
      }
    });
  });
}
