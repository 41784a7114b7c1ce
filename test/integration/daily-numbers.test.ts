/**
 * Date-stamped order numbers (issue 43) on real stores: a time zone that puts
 * the same instant on another day, restarts, two servers on one store, and a
 * clock stepped back across midnight (an injected clock): no number twice,
 * and an issuer's day never goes back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { DailyNumbers, FileHighWaterMarkStore, IdService, SqliteSegmentStore } from '../../src/app/index.js';
import { PostgresSegmentStore } from '../../src/adapters/postgres/postgres-segment-store.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { parseDailyNumber } from '../../src/core/business-number/daily-number.js';
import { POSTGRES_URL, probePostgres } from '../contract/backends.js';
import { describeWithService } from '../helpers/services.js';
import { SQL_DATABASES } from '../helpers/sql-databases.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-daily-'));
const pgTables: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const pgDb = SQL_DATABASES.find((d) => d.name === 'postgres')!;
  for (const t of pgTables) await pgDb.exec(`DROP TABLE IF EXISTS ${t}; DROP TABLE IF EXISTS ${t}_ledger`).catch(() => {});
});

const unique = () => Math.random().toString(36).slice(2, 9);

/** 2026-12-05 23:59:58 in Shanghai (UTC+8), still the 5th in UTC. */
const BEFORE_MIDNIGHT = Date.UTC(2026, 11, 5, 15, 59, 58);
/** 2026-12-06 00:00:01 in Shanghai, still the 5th in UTC. */
const AFTER_MIDNIGHT = Date.UTC(2026, 11, 5, 16, 0, 1);

class ManualClock {
  constructor(public t: number) {}
  now = (): number => this.t;
  monotonic = (): number => performance.now();
}

interface Server {
  service: IdService;
  numbers: DailyNumbers;
}

async function server(store: SegmentStore, clock: ManualClock, tag: string, timeZone = 'Asia/Shanghai'): Promise<Server> {
  const service = new IdService({
    store,
    marks: new FileHighWaterMarkStore(mkdtempSync(join(dir, 'state-'))),
    clock,
    refreshIntervalMs: 0,
  });
  await service.start();
  return { service, numbers: new DailyNumbers({ service, tag, format: { timeZone }, clock, step: 10 }) };
}

/** Numbers in issue order; each must be new, and its day never before the previous one of the same server. */
function checkRun(issued: Map<string, string>, server: string, numbers: string[], lastDay: { day: string }): void {
  for (const n of numbers) {
    expect(issued.has(n), `${n} issued twice (by ${issued.get(n)} and ${server})`).toBe(false);
    issued.set(n, server);
    const { day } = parseDailyNumber(n, { digits: 6 });
    expect(day >= lastDay.day, `${server}: ${n} after a number of ${lastDay.day}`).toBe(true);
    lastDay.day = day;
  }
}

it('the same instant is another day in Asia/Shanghai than in UTC (SQLite)', async () => {
  const clock = new ManualClock(AFTER_MIDNIGHT);
  const s = await server(new SqliteSegmentStore({ path: join(dir, `tz-${unique()}.db`) }), clock, 'ORD');
  try {
    const utc = new DailyNumbers({ service: s.service, tag: 'ORDUTC', format: { timeZone: 'UTC', check: true }, clock });
    expect(await s.numbers.next()).toBe('20261206-000001');
    expect(await utc.next()).toBe(`20261205-000001${'0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U'[Number(20261205000001n % 37n)]}`);
    expect((await s.service.listTags()).map((t) => t.tag).sort()).toEqual(['ORD:20261206', 'ORDUTC:20261205']);
  } finally {
    await s.service.close();
  }
});

async function scenario(makeStore: () => SegmentStore): Promise<void> {
  const tag = `ORD_${unique()}`;
  const clock = new ManualClock(BEFORE_MIDNIGHT);
  const issued = new Map<string, string>();
  const dayA = { day: '' };
  const dayB = { day: '' };

  // Server A on the 5th, then across midnight.
  let a = await server(makeStore(), clock, tag);
  const first = await a.numbers.nextMany(5);
  expect(first).toEqual(['20261205-000001', '20261205-000002', '20261205-000003', '20261205-000004', '20261205-000005']);
  checkRun(issued, 'A', first, dayA);
  clock.t = AFTER_MIDNIGHT;
  const sixth = await a.numbers.nextMany(3);
  expect(sixth).toEqual(['20261206-000001', '20261206-000002', '20261206-000003']);
  checkRun(issued, 'A', sixth, dayA);

  // The clock is stepped back across midnight: A stays on the 6th.
  clock.t = BEFORE_MIDNIGHT - 60_000;
  const stepped = await a.numbers.nextMany(20); // past its range of 10: a new range of the 6th
  expect(stepped.every((n) => n.startsWith('20261206-'))).toBe(true);
  checkRun(issued, 'A', stepped, dayA);

  // A restarts with the clock still behind midnight: it goes on with the 6th, no counter again.
  await a.service.close();
  a = await server(makeStore(), clock, tag);
  const afterRestart = await a.numbers.nextMany(5);
  expect(afterRestart.every((n) => n.startsWith('20261206-'))).toBe(true);
  checkRun(issued, 'A', afterRestart, dayA);

  // Server B starts on the same store with the clock behind: it reads the latest day from the store.
  const b = await server(makeStore(), clock, tag);
  checkRun(issued, 'B', await b.numbers.nextMany(1), dayB);
  expect(dayB.day).toBe('20261206');

  // Both issue at once, 400 numbers each in small batches, while the clock crosses into the 7th.
  const run = async (s: Server, name: string, last: { day: string }) => {
    for (let i = 0; i < 100; i++) {
      if (i === 50) clock.t = Date.UTC(2026, 11, 6, 16, 0, 0); // 2026-12-07 00:00 in Shanghai
      checkRun(issued, name, await s.numbers.nextMany(4), last);
    }
  };
  await Promise.all([run(a, 'A', dayA), run(b, 'B', dayB)]);
  expect([dayA.day, dayB.day]).toEqual(['20261207', '20261207']);

  // Both restart: nothing given twice after a clean stop and start either.
  await Promise.all([a.service.close(), b.service.close()]);
  const a2 = await server(makeStore(), clock, tag);
  const b2 = await server(makeStore(), clock, tag);
  await Promise.all([run(a2, 'A', dayA), run(b2, 'B', dayB)]);
  await Promise.all([a2.service.close(), b2.service.close()]);
  expect(issued.size).toBe(5 + 3 + 20 + 5 + 1 + 4 * 400);
  const days = new Set([...issued.keys()].map((n) => n.slice(0, 8)));
  expect([...days].sort()).toEqual(['20261205', '20261206', '20261207']);
}

it('restart, two servers on one SQLite file, a clock stepped back across midnight: no repeat, the day never goes back', async () => {
  const db = join(dir, `two-${unique()}.db`);
  await scenario(() => new SqliteSegmentStore({ path: db }));
}, 60_000);

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('daily numbers on PostgreSQL', () => {
  it('restart, two servers on one PostgreSQL table, a clock stepped back across midnight: no repeat, the day never goes back', async () => {
    const table = `seq_daily_${unique()}`;
    pgTables.push(table);
    await scenario(() => new PostgresSegmentStore({ connectionString: POSTGRES_URL, table }));
  }, 60_000);
});
