/**
 * The stores on Leaf's and Tinyid's own tables (`?schema=leaf`,
 * `?schema=tinyid`): the segment-store contract on PostgreSQL and MariaDB,
 * and what only they promise: the peer's table gains nothing, the peer's own
 * allocation (Leaf's DAO with its dynamic step, Tinyid's optimistic update)
 * and Sequoia's store share one row without overlap, every ID keeps a Tinyid
 * row's delta/remainder rule, the URL selects them, and a missing peer table
 * is refused, not created.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MysqlLeafSegmentStore } from '../../src/adapters/mysql/mysql-leaf-segment-store.js';
import { MysqlTinyidSegmentStore } from '../../src/adapters/mysql/mysql-tinyid-segment-store.js';
import { PostgresLeafSegmentStore } from '../../src/adapters/postgres/postgres-leaf-segment-store.js';
import { PostgresTinyidSegmentStore } from '../../src/adapters/postgres/postgres-tinyid-segment-store.js';
import { createStore } from '../../src/app/stores.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { LeafSegmentLoader, mysqlLeafDao, postgresLeafDao } from '../helpers/leaf-standin.js';
import { LEAF, PEERS, type PeerSchema, peerStoreUrl, TINYID } from '../helpers/peer-schemas.js';
import { SQL_DATABASES, type SqlDatabase } from '../helpers/sql-databases.js';
import { describeWithService } from '../helpers/services.js';
import { mysqlTinyidService, postgresTinyidService, segmentIds, type TinyidService, TinyidConflict } from '../helpers/tinyid-standin.js';
import { MYSQL_URL, POSTGRES_URL, uniqueName } from './backends.js';
import { type ContractHarness, expectSqlRecreateIsAnotherCreation, idsOf, runSegmentStoreContract } from './segment-store-contract.js';

interface PeerHarness extends ContractHarness {
  /** The peer table's name as the admin connection reaches it. */
  readonly table: string;
  /** A statement as the peer's admins run it, on the admin connection. */
  readonly sql: (text: string) => Promise<void>;
  readonly columns: () => Promise<string[]>;
  /** Where the peer's own code connects: its URL and the table's name there. */
  readonly peerUrl: string;
  readonly peerTable: string;
}

interface StoreOptions {
  readonly table?: string;
  readonly sideTable?: string;
  readonly connectTimeoutMs?: number;
}

const STORES: Record<PeerSchema['name'], Record<SqlDatabase['name'], (url: string, o: StoreOptions) => SegmentStore>> = {
  leaf: {
    postgres: (connectionString, o) => new PostgresLeafSegmentStore({ connectionString, ...o, table: o.table ?? LEAF.table }),
    mysql: (uri, o) => new MysqlLeafSegmentStore({ uri, ...o, table: o.table ?? LEAF.table }),
  },
  tinyid: {
    postgres: (connectionString, o) => new PostgresTinyidSegmentStore({ connectionString, ...o, table: o.table ?? TINYID.table }),
    mysql: (uri, o) => new MysqlTinyidSegmentStore({ uri, ...o, table: o.table ?? TINYID.table }),
  },
};

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

async function postgresHarness(peer: PeerSchema): Promise<PeerHarness> {
  const table = uniqueName(`t_${peer.table}`);
  const side = uniqueName('sq_side');
  const app = uniqueName('sq_app');
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  admin.on('error', () => {});
  await admin.query(peer.ddl('postgres', table));
  const make = (url: string, t = table) => STORES[peer.name].postgres(url, { table: t, sideTable: side });
  const store = make(withParams(POSTGRES_URL, { application_name: app }));
  return {
    noLedger: true,
    store,
    table,
    peerUrl: POSTGRES_URL,
    peerTable: table,
    url: peerStoreUrl(POSTGRES_URL, peer, { table, side }),
    sql: async (text) => {
      await admin.query(text);
    },
    columns: async () =>
      (
        await admin.query('SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position', [table])
      ).rows.map((x: { column_name: string }) => x.column_name),
    dropConnections: async () =>
      (await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app])).rowCount ?? 0,
    unreachable: () => STORES[peer.name].postgres('postgres://postgres@127.0.0.1:1/test', { connectTimeoutMs: 1000 }),
    withName: (name) => make(POSTGRES_URL, name),
    snapshot: async (tag) =>
      (await admin.query(`SELECT max_id::text AS m FROM ${table} WHERE ${peer.key} = $1`, [tag])).rows[0]?.m as string,
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${table} SET max_id = $2::bigint WHERE ${peer.key} = $1`, [tag, snap as string]);
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

async function mysqlHarness(peer: PeerSchema): Promise<PeerHarness> {
  // A database of its own: the server can then be made to drop exactly this store's connections.
  const database = uniqueName(`sq_${peer.name}db`);
  const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 2, supportBigNumbers: true, bigNumberStrings: true });
  await admin.query(`CREATE DATABASE ${database}`);
  const u = new URL(MYSQL_URL);
  u.pathname = `/${database}`;
  const uri = u.toString();
  const table = `t_${peer.table}`;
  await admin.query(peer.ddl('mysql', `${database}\`.\`${table}`, { binary: true }));
  const make = (t = table) => STORES[peer.name].mysql(uri, { table: t });
  const store = make();
  return {
    noLedger: true,
    store,
    table: `${database}.${table}`,
    peerUrl: uri,
    peerTable: table,
    url: peerStoreUrl(uri, peer, { table }),
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
    dropConnections: async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SELECT id FROM information_schema.PROCESSLIST WHERE db = ?', [database]);
      for (const r of rows) await admin.query(`KILL ${Number(r.id)}`).catch(() => {});
      return rows.length;
    },
    unreachable: () => STORES[peer.name].mysql('mysql://root@127.0.0.1:1/test', { connectTimeoutMs: 1000 }),
    withName: (name) => make(name),
    snapshot: async (tag) => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT max_id FROM ${database}.${table} WHERE ${peer.key} = ?`, [tag]);
      return rows[0]?.max_id as string;
    },
    restore: async (tag, snap) => {
      await admin.query(`UPDATE ${database}.${table} SET max_id = CAST(? AS SIGNED) WHERE ${peer.key} = ?`, [snap as string, tag]);
    },
    reopen: async () => make(),
    cleanup: async () => {
      await store.close();
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    },
  };
}

const HARNESSES: Record<SqlDatabase['name'], (peer: PeerSchema) => Promise<PeerHarness>> = {
  postgres: postgresHarness,
  mysql: mysqlHarness,
};
const CONTRACT_NAMES: Record<SqlDatabase['name'], string> = { postgres: 'postgres', mysql: 'mysql/mariadb' };

/** The open harness of a describe block: set by its beforeAll. */
interface Opened {
  readonly h: PeerHarness;
  readonly store: SegmentStore;
}

/** Leaf's own case: its DAO and dynamic step beside Sequoia's store. */
function leafCases(db: SqlDatabase, opened: () => Opened): void {
  it("Leaf's DAO (with its dynamic step) and Sequoia's store interleave on one row without overlap", async () => {
    const { h, store } = opened();
    const t = `mix-${process.pid}`;
    await store.createTag({ tag: t, step: 7, start: 1n });
    const dao = db.name === 'postgres' ? postgresLeafDao(h.peerUrl, h.peerTable) : mysqlLeafDao(h.peerUrl, h.peerTable);
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
}

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

/** Tinyid's own cases: its optimistic allocation beside Sequoia's store, and the delta/remainder rule. */
function tinyidCases(db: SqlDatabase, opened: () => Opened): void {
  const service = (h: PeerHarness) => (db.name === 'postgres' ? postgresTinyidService : mysqlTinyidService)(h.peerUrl, h.peerTable);

  it('a row with delta 3, remainder 2: every ID keeps the rule, Tinyid and Sequoia interleave without overlap', async () => {
    const { h, store } = opened();
    const t = `odd-${process.pid}`;
    await h.sql(TINYID.insertRow(h.table, { tag: t, maxId: 1n, step: 20, delta: 3, remainder: 2 }));
    const tinyid = service(h);
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
          for (let i = 0; i < 12; i++) add(await tinyidSegment(tinyid, t));
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
      await tinyid.close();
    }
    expect(seen.size).toBe(total);
    const info = await store.getTag(t);
    // dense within the class: every ID ≡ 2 (mod 3) from the first one above begin_id up to max_id was handed out once
    expect(info?.maxId).toBe(2n + 3n * BigInt(total));
    expect(info?.maxId && info.maxId % 3n).toBe(2n);
    expect(info?.step).toBe(6); // 20 numbers hold 6 or 7 IDs of the class; Sequoia counts the lower
  });

  it('a give-back on a delta row returns the tail to Tinyid, which hands it out with the rule', async () => {
    const { h, store } = opened();
    const t = `give-odd-${process.pid}`;
    await h.sql(TINYID.insertRow(h.table, { tag: t, maxId: 100n, step: 30, delta: 5, remainder: 4 }));
    const a = await store.allocate(t);
    const ids = idsOf(a);
    expect(ids[0]).toBe(104n);
    expect(ids).toEqual([104n, 109n, 114n, 119n, 124n, 129n]);
    expect(await store.giveBack(t, 114n, { maxId: a.maxId, fenceEpoch: a.fenceEpoch, generation: a.generation })).toBe(true);
    const tinyid = service(h);
    try {
      expect((await tinyidSegment(tinyid, t))[0]).toBe(114n);
    } finally {
      await tinyid.close();
    }
  });

  it('refuses a row whose remainder is outside 0..delta-1, and lists it all the same', async () => {
    const { h, store } = opened();
    const t = `bad-${process.pid}`;
    await h.sql(TINYID.insertRow(h.table, { tag: t, maxId: 1n, step: 10, delta: 2, remainder: 2 }));
    await expect(store.allocate(t)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: /remainder/ });
    expect((await store.listTags()).some((x) => x.tag === t)).toBe(true);
  });
}

const OWN_CASES: Record<PeerSchema['name'], (db: SqlDatabase, opened: () => Opened) => void> = { leaf: leafCases, tinyid: tinyidCases };

for (const db of SQL_DATABASES) {
  const describeDb = await describeWithService(db.service, db.probe);
  for (const peer of PEERS) {
    describeDb(`${db.name} ${peer.table}`, () =>
      runSegmentStoreContract(`${CONTRACT_NAMES[db.name]} ?schema=${peer.name}`, () => HARNESSES[db.name](peer)),
    );

    describeDb(`${db.name} ${peer.table}: own cases`, () => {
      let h: PeerHarness;
      let store: SegmentStore;
      beforeAll(async () => {
        h = await HARNESSES[db.name](peer);
        store = h.store;
        await store.init();
      });
      afterAll(async () => {
        await h?.cleanup();
      });
      const opened = (): Opened => ({ h, store });

      it(`${peer.title}'s table gains no column (Sequoia's state is in its side table)`, async () => {
        const t = `cols-${process.pid}`;
        await store.createTag({ tag: t, step: 10, description: 'kept aside' });
        await store.allocate(t);
        await store.fence(t, 1000n);
        expect(await h.columns()).toEqual(peer.columns);
        expect(await store.getTag(t)).toMatchObject({ fenceEpoch: 1, description: 'kept aside', maxId: 1000n });
      });

      OWN_CASES[peer.name](db, opened);

      it(`a row deleted with \`tag delete\` and inserted again with ${peer.title}'s SQL is another creation: an old give-back cannot land in it`, async () => {
        // The peer's admins create rows with an INSERT, which Sequoia cannot see; its own delete is what renews the generation.
        await expectSqlRecreateIsAnotherCreation(store, (t) => h.sql(peer.insertRow(h.table, { tag: t, step: 10 })), `${peer.name}-sql`);
      });

      it(`is selected by the store URL (?schema=${peer.name}&table=…), and bad parameters are refused`, async () => {
        const s = await createStore(h.url as string);
        try {
          expect(s.kind).toMatch(new RegExp(`-${peer.name}$`));
          await s.init();
          const t = `url-${process.pid}`;
          await store.createTag({ tag: t, step: 5, start: 100n });
          expect((await s.allocate(t)).maxId).toBe(105n);
        } finally {
          await s.close();
        }
        for (const schema of ['tinyid-ish', 'tiny']) {
          const bad = new URL(h.url as string);
          bad.searchParams.set('schema', schema);
          await expect(createStore(bad.toString())).rejects.toMatchObject({
            code: 'INVALID_ARGUMENT',
            message: /schema must be sequoia, leaf or tinyid/,
          });
        }
      });

      it(`refuses to start on a missing ${peer.title} table, naming it, and creates nothing`, async () => {
        const url = new URL(h.url as string);
        url.searchParams.set('table', `no_such_${peer.name}_table`);
        const s = await createStore(url.toString());
        try {
          await expect(s.init()).rejects.toMatchObject({
            code: 'STORE_UNAVAILABLE',
            message: new RegExp(`no_such_${peer.name}_table not found`),
          });
        } finally {
          await s.close();
        }
      });
    });
  }
}
