/**
 * Issue 24: Sequoia beside Tinyid on Tinyid's own table. On real PostgreSQL
 * and MariaDB, two stand-ins of Tinyid's server (its DAO SQL and optimistic
 * READ COMMITTED transaction, test/helpers/tinyid-standin.ts) and two
 * `sequoia serve --store …?schema=tinyid` processes draw from one
 * tiny_id_info row (delta 3, remainder 2) at once while servers and
 * stand-ins are SIGKILLed and restarted: the union of every ID handed out
 * has no repeat, and every ID is ≡ 2 (mod 3).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres, uniqueName } from '../contract/backends.js';
import { assertBuilt, BIN, launchServe, type ServerProcess } from '../helpers/cli.js';
import { tinyidDdlMysql, tinyidDdlPostgres, tinyidRowSql } from '../helpers/tinyid-standin.js';
import { describeWithService } from '../helpers/services.js';
import { type StandIn, startStandIn } from '../helpers/standin-process.js';

const RUN_MS = Number(process.env.SEQUOIA_TINYID_RUN_MS ?? 6000);
const DELTA = 3;
const REMAINDER = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const servers = new Set<ServerProcess>();
const standIns = new Set<StandIn>();
afterAll(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  for (const s of standIns) s.child.kill('SIGKILL');
});

interface Setup {
  /** URL for the stand-in's driver (no Sequoia parameters). */
  readonly dbUrl: string;
  readonly table: string;
  readonly drop: () => Promise<void>;
}

interface Kind {
  readonly name: 'postgres' | 'mysql';
  readonly service: string;
  readonly probe: () => Promise<void>;
  readonly setup: (tag: string) => Promise<Setup>;
}

const KINDS: Kind[] = [
  {
    name: 'postgres',
    service: 'PostgreSQL',
    probe: probePostgres,
    setup: async (tag) => {
      const table = uniqueName('t_tiny_id_info');
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(tinyidDdlPostgres(table));
      await c.query(tinyidRowSql(table, { bizType: tag, maxId: 1n, step: 60, delta: DELTA, remainder: REMAINDER }));
      await c.end();
      return {
        dbUrl: POSTGRES_URL,
        table,
        drop: async () => {
          const d = new pg.Client({ connectionString: POSTGRES_URL });
          await d.connect();
          await d.query(`DROP TABLE IF EXISTS ${table}`);
          await d.query('DELETE FROM sequoia_tinyid_state WHERE source_table = $1', [table]).catch(() => {});
          await d.end();
        },
      };
    },
  },
  {
    name: 'mysql',
    service: 'MariaDB/MySQL',
    probe: probeMysql,
    setup: async (tag) => {
      const table = uniqueName('t_tiny_id_info');
      const c = await mysql.createConnection({ uri: MYSQL_URL });
      await c.query(tinyidDdlMysql(table));
      await c.query(tinyidRowSql(table, { bizType: tag, maxId: 1n, step: 60, delta: DELTA, remainder: REMAINDER }));
      await c.end();
      return {
        dbUrl: MYSQL_URL,
        table,
        drop: async () => {
          const d = await mysql.createConnection({ uri: MYSQL_URL });
          await d.query(`DROP TABLE IF EXISTS ${table}`);
          await d.query('DELETE FROM sequoia_tinyid_state WHERE source_table = ?', [table]).catch(() => {});
          await d.end();
        },
      };
    },
  },
];

async function serve(store: string, stateDir: string): Promise<ServerProcess> {
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

function standIn(kind: Kind, s: Setup, tag: string): StandIn {
  const p = startStandIn('tinyid-standin-main', [kind.name, s.dbUrl, s.table, tag]);
  standIns.add(p);
  void p.exited.then(() => standIns.delete(p));
  return p;
}

/** Sorted half-open intervals; throws naming the first pair that overlaps. */
function expectNoOverlap(ranges: Array<[bigint, bigint]>): void {
  const sorted = [...ranges].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1] as [bigint, bigint];
    const cur = sorted[i] as [bigint, bigint];
    if (cur[0] < prev[1]) throw new Error(`repeat: [${prev[0]}, ${prev[1]}) and [${cur[0]}, ${cur[1]}) overlap`);
  }
}

for (const kind of KINDS) {
  const describeStore = await describeWithService(kind.service, kind.probe);
  describeStore(`Sequoia beside Tinyid on tiny_id_info: ${kind.name}`, () => {
    it(`two Tinyid stand-ins and two Sequoia servers, kills and restarts for ${RUN_MS} ms: no ID twice, every ID ≡ ${REMAINDER} mod ${DELTA}`, async () => {
      assertBuilt();
      const tag = 'test_odd';
      const setup = await kind.setup(tag);
      const u = new URL(setup.dbUrl);
      u.searchParams.set('schema', 'tinyid');
      u.searchParams.set('table', setup.table);
      const store = u.toString();
      const base = mkdtempSync(join(tmpdir(), `sequoia-tinyid-${kind.name}-`));
      const states = [join(base, 's0'), join(base, 's1')];
      const seq: (ServerProcess | undefined)[] = await Promise.all(states.map((d) => serve(store, d)));
      const tinyids: StandIn[] = [standIn(kind, setup, tag), standIn(kind, setup, tag)];
      const allTinyids: StandIn[] = [...tinyids];
      const ids: string[] = [];
      let stop = false;
      let kills: number;
      try {
        const client = async (c: number) => {
          let i = c;
          while (!stop) {
            const s = seq[i++ % seq.length];
            if (!s) {
              await sleep(5);
              continue;
            }
            try {
              const res = await fetch(`${s.url}/v1/segment/${tag}?count=${1 + (i % 9)}`);
              const text = await res.text();
              if (res.status !== 200) continue;
              ids.push(...(JSON.parse(text) as { ids: string[] }).ids);
            } catch {
              await sleep(5); // killed under us
            }
          }
        };
        const clients = Array.from({ length: 4 }, (_, c) => client(c));
        const until = Date.now() + RUN_MS;
        const restarts: Promise<void>[] = [];
        let round = 0;
        let seqKills = 0;
        let tinyidKills = 0;
        while (Date.now() < until - 1000 || seqKills < 2 || tinyidKills < 2) {
          await sleep(600);
          round++;
          if (round % 2 === 1) {
            const i = seqKills % seq.length;
            const victim = seq[i];
            if (!victim) continue; // still restarting
            seq[i] = undefined;
            victim.child.kill('SIGKILL');
            seqKills++;
            // restart in the background (a start takes seconds here): the load and the other kills go on
            restarts.push(
              (async () => {
                expect(await victim.exited).toBe('SIGKILL');
                seq[i] = await serve(store, states[i] as string);
              })(),
            );
          } else {
            const j = tinyidKills % tinyids.length;
            const victim = tinyids[j] as StandIn;
            victim.child.kill('SIGKILL');
            tinyidKills++;
            await victim.exited;
            tinyids[j] = standIn(kind, setup, tag);
            allTinyids.push(tinyids[j] as StandIn);
          }
        }
        await Promise.all(restarts);
        kills = seqKills + tinyidKills;
        // both servers serve again for a while after their restarts
        await sleep(Math.max(1500, until - Date.now()));
        stop = true;
        await Promise.all(clients);
        for (const l of tinyids) l.child.kill('SIGTERM');
        await Promise.all(tinyids.map((l) => l.exited));

        const tinyidRanges = allTinyids.flatMap((l) => l.ranges);
        const seqRanges = ids.map((id): [bigint, bigint] => [BigInt(id), BigInt(id) + 1n]);
        console.log(`[tinyid ${kind.name}] ${ids.length} Sequoia IDs, ${tinyidRanges.length} Tinyid segments, ${kills} kills`);
        // a Tinyid segment prints its first ID and its last + 1; all of its IDs are of the class, so the bounds are too
        for (const [first, end] of tinyidRanges) {
          expect(first % BigInt(DELTA)).toBe(BigInt(REMAINDER));
          expect((end - 1n) % BigInt(DELTA)).toBe(BigInt(REMAINDER));
        }
        expect(ids.filter((id) => BigInt(id) % BigInt(DELTA) !== BigInt(REMAINDER))).toEqual([]);
        expect(kills).toBeGreaterThanOrEqual(4);
        expect(ids.length).toBeGreaterThan(200);
        expect(tinyidRanges.length).toBeGreaterThan(20);
        for (const l of allTinyids) expect(l.stderr()).toBe('');
        expect(new Set(ids).size).toBe(ids.length);
        expectNoOverlap([...tinyidRanges, ...seqRanges]);
      } finally {
        stop = true;
        for (const l of tinyids) l.child.kill('SIGKILL');
        await Promise.all(
          seq.map(async (s) => {
            if (!s) return;
            s.child.kill('SIGTERM');
            await s.exited;
          }),
        );
        await setup.drop().catch(() => {});
      }
    }, 240_000);
  });
}
