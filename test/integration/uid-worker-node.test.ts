/**
 * Issue 24: Sequoia beside uid-generator on its own WORKER_NODE table. On real
 * MariaDB and PostgreSQL, a stand-in of uid-generator's worker-id assignment
 * (its insert, transcribed in test/helpers/uid-generator-standin.ts) starts
 * generators again and again while two `sequoia serve --worker-id-provider
 * worker-node:URL` processes start, are SIGKILLed and start again: every
 * worker id the stand-in got and every worker id a Sequoia server issued IDs
 * with are distinct, and each Sequoia id is the ID of a row Sequoia inserted.
 * An id past the layout's worker bits is refused, naming why.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from '../contract/backends.js';
import { assertBuilt, BIN, launchServe, type ServerProcess } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import {
  assignWorkerIdMysql,
  assignWorkerIdPostgres,
  workerNodeDdlMysql,
  workerNodeDdlPostgres,
} from '../helpers/uid-generator-standin.js';

const servers = new Set<ServerProcess>();
afterAll(() => {
  for (const s of servers) s.child.kill('SIGKILL');
});

interface Kind {
  readonly name: 'postgres' | 'mysql';
  readonly service: string;
  readonly probe: () => Promise<void>;
  readonly url: string;
  readonly ddl: (table: string) => string;
  readonly assign: (url: string, table: string) => Promise<string>;
  /** [ID, PORT] of every row. */
  readonly rows: (table: string) => Promise<Array<[string, string]>>;
  /** Makes the next ID `next`. */
  readonly restartAt: (table: string, next: number) => Promise<void>;
  readonly exec: (sql: string) => Promise<void>;
}

const KINDS: Kind[] = [
  {
    name: 'mysql',
    service: 'MariaDB/MySQL',
    probe: probeMysql,
    url: MYSQL_URL,
    ddl: workerNodeDdlMysql,
    assign: assignWorkerIdMysql,
    rows: async (table) => {
      const c = await mysql.createConnection({ uri: MYSQL_URL, supportBigNumbers: true, bigNumberStrings: true });
      const [rows] = await c.query<mysql.RowDataPacket[]>(`SELECT CAST(ID AS CHAR) AS id, PORT AS port FROM ${table}`);
      await c.end();
      return rows.map((r) => [String(r.id), String(r.port)]);
    },
    restartAt: (table, next) => execMysql(`ALTER TABLE ${table} AUTO_INCREMENT = ${next}`),
    exec: execMysql,
  },
  {
    name: 'postgres',
    service: 'PostgreSQL',
    probe: probePostgres,
    url: POSTGRES_URL,
    ddl: workerNodeDdlPostgres,
    assign: assignWorkerIdPostgres,
    rows: async (table) => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      const r = await c.query<{ id: string; port: string }>(`SELECT id::text AS id, port FROM ${table}`);
      await c.end();
      return r.rows.map((x) => [x.id, x.port]);
    },
    restartAt: (table, next) => execPostgres(`ALTER SEQUENCE ${table}_id_seq RESTART WITH ${next}`),
    exec: execPostgres,
  },
];

async function execMysql(sql: string): Promise<void> {
  const c = await mysql.createConnection({ uri: MYSQL_URL });
  await c.query(sql);
  await c.end();
}

async function execPostgres(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: POSTGRES_URL });
  await c.connect();
  await c.query(sql);
  await c.end();
}

function providerSpec(kind: Kind, table: string): string {
  const u = new URL(kind.url);
  u.searchParams.set('table', table);
  return `worker-node:${u.toString()}`;
}

async function serve(provider: string, dir: string): Promise<ServerProcess> {
  // A start takes ~15 s on a loaded 2-core machine: more than startServe's default wait.
  const s = await launchServe(
    process.execPath,
    [
      BIN,
      'serve',
      '--port',
      '0',
      '--store',
      `sqlite:${join(dir, 'ids.db')}`,
      '--state-dir',
      join(dir, 'state'),
      '--snowflake-layout',
      'leaf',
      '--worker-id-provider',
      provider,
    ],
    { env: { SEQUOIA_WORKERS: '1' }, startTimeoutMs: 60_000 },
  );
  servers.add(s);
  void s.exited.then(() => servers.delete(s));
  return s;
}

/** The worker id a server issues with: read back from an ID it hands out. */
async function workerIdOf(s: ServerProcess): Promise<string> {
  const id = await (await fetch(`${s.url}/api/snowflake/get/x`)).text();
  expect(id).toMatch(/^[1-9][0-9]*$/);
  const e = (await (await fetch(`${s.url}/v1/explain/${id}?layout=leaf`)).json()) as { worker: number };
  return String(e.worker);
}

for (const kind of KINDS) {
  const describeStore = await describeWithService(kind.service, kind.probe);
  describeStore(`Sequoia beside uid-generator on WORKER_NODE: ${kind.name}`, () => {
    it('stand-in starts and Sequoia servers killed and restarted never share a worker id', async () => {
      assertBuilt();
      const table = uniqueName(kind.name === 'mysql' ? 'WORKER_NODE' : 'worker_node');
      await kind.exec(kind.ddl(table));
      try {
        const provider = providerSpec(kind, table);
        const base = mkdtempSync(join(tmpdir(), `sequoia-uid-${kind.name}-`));
        const dirs = [join(base, 's0'), join(base, 's1')];
        const standInIds: string[] = [];
        let stop = false;
        // three generators starting over and over, as uid-generator does on every JVM start
        const standIns = Array.from({ length: 3 }, async () => {
          while (!stop) standInIds.push(await kind.assign(kind.url, table));
        });
        const sequoiaIds: string[] = [];
        try {
          for (let round = 0; round < 2; round++) {
            const running = await Promise.all(dirs.map((d) => serve(provider, d)));
            for (const s of running) sequoiaIds.push(await workerIdOf(s));
            for (const s of running) {
              s.child.kill('SIGKILL');
              expect(await s.exited).toBe('SIGKILL');
            }
          }
        } finally {
          stop = true;
          await Promise.all(standIns);
        }
        expect(sequoiaIds).toHaveLength(4);
        expect(standInIds.length).toBeGreaterThan(4);
        const all = [...standInIds, ...sequoiaIds];
        expect(new Set(all).size).toBe(all.length);
        // each Sequoia worker id is the ID of a row Sequoia inserted, with uid-generator's columns
        const rows = new Map(await kind.rows(table));
        for (const id of sequoiaIds) expect(rows.get(id)).toMatch(/^sequoia:\d+:\d+:\d+$/);
        for (const id of standInIds) expect(rows.get(id)).toMatch(/^\d+-\d+$/);
      } finally {
        await kind.exec(`DROP TABLE IF EXISTS ${table}`);
      }
    }, 240_000);

    it("refuses an id past the layout's worker bits, and a table that is not there", async () => {
      assertBuilt();
      const table = uniqueName(kind.name === 'mysql' ? 'WORKER_NODE' : 'worker_node');
      await kind.exec(kind.ddl(table));
      try {
        await kind.restartAt(table, 1024); // the leaf layout has worker ids 0..1023
        const s = await serve(providerSpec(kind, table), mkdtempSync(join(tmpdir(), `sequoia-uid-${kind.name}-`)));
        const r = await fetch(`${s.url}/api/snowflake/get/x`);
        const body = await r.text();
        expect(r.status).toBeGreaterThanOrEqual(500);
        expect(s.output()).toContain("gave worker id 1024, beyond layout leaf's worker ids 0..1023");
        // segment IDs go on being served
        expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
        s.child.kill('SIGKILL');
        await s.exited;
        expect(body).not.toMatch(/^[0-9]+$/);
        // one row for the refused start, not one per retry
        expect((await kind.rows(table)).length).toBe(1);
        const missing = await serve(providerSpec(kind, `${table}_nope`), mkdtempSync(join(tmpdir(), `sequoia-uid-${kind.name}-`)));
        await fetch(`${missing.url}/api/snowflake/get/x`);
        expect(missing.output()).toMatch(/worker-node: table \S+_nope not found/);
        missing.child.kill('SIGKILL');
        await missing.exited;
      } finally {
        await kind.exec(`DROP TABLE IF EXISTS ${table}`);
      }
    }, 180_000);
  });
}
