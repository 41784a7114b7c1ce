/**
 * The stores on Tinyid's own table (`?schema=tinyid`): the segment-store
 * contract on PostgreSQL and MariaDB, and what only they promise: Tinyid's
 * table gains nothing, Tinyid's optimistic allocation and Sequoia's store
 * share one row without overlap, every ID keeps the row's delta/remainder
 * rule, the URL selects them, and a missing table is refused, not created.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MysqlTinyidSegmentStore } from '../../src/adapters/mysql/mysql-tinyid-segment-store.js';
import { PostgresTinyidSegmentStore } from '../../src/adapters/postgres/postgres-tinyid-segment-store.js';
import { createStore } from '../../src/app/stores.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { describeWithService } from '../helpers/services.js';
import {
  mysqlTinyidService,
  postgresTinyidService,
  segmentIds,
  type TinyidService,
  TinyidConflict,
  tinyidDdlMysql,
  tinyidDdlPostgres,
  tinyidRowSql,
} from '../helpers/tinyid-standin.js';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from './backends.js';
import { type ContractHarness, expectSqlRecreateIsAnotherCreation, idsOf, runSegmentStoreContract } from './segment-store-contract.js';

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

interface TinyidHarness extends ContractHarness {
  readonly table: string;
  readonly sql: (text: string) => Promise<void>;
  readonly columns: () => Promise<string[]>;
  readonly service: () => TinyidService;
}

async function postgresTinyidHarness(): Promise<TinyidHarness> {
  const table = uniqueName('t_tiny_id_info');
  const side = uniqueName('sq_tside');
  const app = uniqueName('sq_app');
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  admin.on('error', () => {});
  await admin.query(tinyidDdlPostgres(table));
  const make = (url: string, t = table) => new PostgresTinyidSegmentStore({ connectionString: url, table: t, sideTable: side });
  const store = make(withParams(POSTGRES_URL, { application_name: app }));
  return {
    noLedger: true,
    store,
    table,
    url: withParams(POSTGRES_URL, { schema: 'tinyid', table, side }),
    sql: async (text) => {
      await admin.query(text);
    },
    columns: async () =>
      (
        await admin.query('SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position', [table])
      ).rows.map((x: { column_name: string }) => x.column_name),
    service: () => postgresTinyidService(POSTGRES_URL, table),
    dropConnections: async () =>
      (await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app])).rowCount ?? 0,
    unreachable: () => new PostgresTinyidSegmentStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectTimeoutMs: 1000 }),
    withName: (name) => make(POSTGRES_URL, name),
    snapshot: async (tag) => (await admin.query(`SELECT max_id::text AS m FROM ${table} WHERE biz_type = $1`, [tag])).rows[0]?.m as string,
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${table} SET max_id = $2::bigint WHERE biz_type = $1`, [tag, snap as string]);
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

async function mysqlTinyidHarness(): Promise<TinyidHarness> {
  // A database of its own: the server can then be made to drop exactly this store's connections.
  const database = uniqueName('sq_tinydb');
  const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 2, supportBigNumbers: true, bigNumberStrings: true });
  await admin.query(`CREATE DATABASE ${database}`);
  const u = new URL(MYSQL_URL);
  u.pathname = `/${database}`;
  const uri = u.toString();
  const table = 't_tiny_id_info';
  await admin.query(tinyidDdlMysql(`${database}\`.\`${table}`, { binary: true }));
  const make = (t = table) => new MysqlTinyidSegmentStore({ uri, table: t });
  const store = make();
  return {
    noLedger: true,
    store,
    table: `${database}.${table}`,
    url: withParams(uri, { schema: 'tinyid', table }),
    sql: async (text) => {
      await admin.query(text);
    },
    columns: async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(
        'SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
        [database, table],
      );
      return rows.map((r) => String(r.c));
    },
    service: () => mysqlTinyidService(uri, table),
    dropConnections: async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SELECT id FROM information_schema.PROCESSLIST WHERE db = ?', [database]);
      for (const r of rows) await admin.query(`KILL ${Number(r.id)}`).catch(() => {});
      return rows.length;
    },
    unreachable: () => new MysqlTinyidSegmentStore({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeoutMs: 1000 }),
    withName: (name) => make(name),
    snapshot: async (tag) => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT max_id FROM ${database}.${table} WHERE biz_type = ?`, [tag]);
      return rows[0]?.max_id as string;
    },
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${database}.${table} SET max_id = CAST(? AS SIGNED) WHERE biz_type = ?`, [snap as string, tag]);
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

describePg('postgres tiny_id_info', () => runSegmentStoreContract('postgres ?schema=tinyid', postgresTinyidHarness));
describeMysql('mysql tiny_id_info', () => runSegmentStoreContract('mysql/mariadb ?schema=tinyid', mysqlTinyidHarness));

const BACKENDS = [
  { name: 'postgres', describe: describePg, harness: postgresTinyidHarness },
  { name: 'mariadb', describe: describeMysql, harness: mysqlTinyidHarness },
];

/** Tinyid gives up after 3 lost races; its callers (tinyid-client, the HTTP server's caller) try again. */
async function tinyidSegment(service: TinyidService, bizType: string): Promise<bigint[]> {
  for (;;) {
    try {
      return segmentIds(await service.getNextSegmentId(bizType));
    } catch (e) {
      if (!(e instanceof TinyidConflict)) throw e;
    }
  }
}

for (const b of BACKENDS) {
  b.describe(`${b.name} tiny_id_info: own cases`, () => {
    let h: TinyidHarness;
    let store: SegmentStore;
    beforeAll(async () => {
      h = await b.harness();
      store = h.store;
      await store.init();
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("Tinyid's table gains no column (Sequoia's state is in its side table)", async () => {
      const t = `cols-${process.pid}`;
      await store.createTag({ tag: t, step: 10, description: 'kept aside' });
      await store.allocate(t);
      await store.fence(t, 1000n);
      expect(await h.columns()).toEqual([
        'id',
        'biz_type',
        'begin_id',
        'max_id',
        'step',
        'delta',
        'remainder',
        'create_time',
        'update_time',
        'version',
      ]);
      expect(await store.getTag(t)).toMatchObject({ fenceEpoch: 1, description: 'kept aside', maxId: 1000n });
    });

    it('a row with delta 3, remainder 2: every ID keeps the rule, Tinyid and Sequoia interleave without overlap', async () => {
      const t = `odd-${process.pid}`;
      await h.sql(tinyidRowSql(h.table, { bizType: t, maxId: 1n, step: 20, delta: 3, remainder: 2 }));
      const service = h.service();
      const seen = new Set<string>();
      let total = 0;
      const add = (ids: bigint[]) => {
        for (const id of ids) {
          expect(id % 3n).toBe(2n);
          seen.add(id.toString());
        }
        total += ids.length;
      };
      try {
        await Promise.all([
          ...[0, 1].map(async () => {
            for (let i = 0; i < 12; i++) add(await tinyidSegment(service, t));
          }),
          ...[undefined, 1, 4, 50].map(async (step) => {
            for (let i = 0; i < 12; i++) {
              const a = await store.allocate(t, step);
              expect(a.stride).toBe(3);
              expect(a.offset).toBe(2);
              if (step !== undefined) expect(a.step).toBe(step);
              add(idsOf(a));
            }
          }),
        ]);
      } finally {
        await service.close();
      }
      expect(seen.size).toBe(total);
      const info = await store.getTag(t);
      // dense within the class: every ID ≡ 2 (mod 3) from the first one above begin_id up to max_id was handed out once
      expect(info?.maxId).toBe(2n + 3n * BigInt(total));
      expect(info?.maxId && info.maxId % 3n).toBe(2n);
      expect(info?.step).toBe(6); // 20 numbers hold 6 or 7 IDs of the class; Sequoia counts the lower
    });

    it("a row deleted with `tag delete` and inserted again with Tinyid's SQL is another creation: an old give-back cannot land in it", async () => {
      // Tinyid's admins create rows with an INSERT, which Sequoia cannot see; its own delete is what renews the generation.
      await expectSqlRecreateIsAnotherCreation(
        store,
        (t) => h.sql(tinyidRowSql(h.table, { bizType: t, maxId: 0n, step: 10 })),
        'tinyid-sql',
      );
    });

    it('a give-back on a delta row returns the tail to Tinyid, which hands it out with the rule', async () => {
      const t = `give-odd-${process.pid}`;
      await h.sql(tinyidRowSql(h.table, { bizType: t, maxId: 100n, step: 30, delta: 5, remainder: 4 }));
      const a = await store.allocate(t);
      const ids = idsOf(a);
      expect(ids[0]).toBe(104n);
      expect(ids).toEqual([104n, 109n, 114n, 119n, 124n, 129n]);
      expect(await store.giveBack(t, a.maxId, 114n, a.fenceEpoch, a.generation)).toBe(true);
      const service = h.service();
      try {
        expect((await tinyidSegment(service, t))[0]).toBe(114n);
      } finally {
        await service.close();
      }
    });

    it('refuses a row whose remainder is outside 0..delta-1, and lists it all the same', async () => {
      const t = `bad-${process.pid}`;
      await h.sql(tinyidRowSql(h.table, { bizType: t, maxId: 1n, step: 10, delta: 2, remainder: 2 }));
      await expect(store.allocate(t)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: /remainder/ });
      expect((await store.listTags()).some((x) => x.tag === t)).toBe(true);
    });

    it('is selected by the store URL (?schema=tinyid&table=…), and bad parameters are refused', async () => {
      const s = await createStore(h.url as string);
      try {
        expect(s.kind).toMatch(/-tinyid$/);
        await s.init();
        const t = `url-${process.pid}`;
        await store.createTag({ tag: t, step: 5, start: 100n });
        expect((await s.allocate(t)).maxId).toBe(105n);
      } finally {
        await s.close();
      }
      const bad = new URL(h.url as string);
      bad.searchParams.set('schema', 'tiny');
      await expect(createStore(bad.toString())).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: /schema must be sequoia, leaf or tinyid/,
      });
    });

    it('refuses to start on a missing Tinyid table, naming it, and creates nothing', async () => {
      const url = new URL(h.url as string);
      url.searchParams.set('table', 'no_such_tinyid_table');
      const s = await createStore(url.toString());
      try {
        await expect(s.init()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: /no_such_tinyid_table not found/ });
      } finally {
        await s.close();
      }
    });
  });
}
