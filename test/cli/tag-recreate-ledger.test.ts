/**
 * `tag delete` advice after an operator's mistake, on every store that keeps
 * a range ledger (real processes: the CLI and `sequoia serve`).
 *
 * The sequence an SRE reproduced on PostgreSQL: a tag hands out IDs; it is
 * deleted (the advice is right); it is created again with no `--start` (1)
 * by mistake, and the server that served it refuses the new ranges
 * (STORE_ROLLBACK_DETECTED); deleted again, the advice used to be the new
 * creation's small max_id, and a new server on a fresh state dir, following
 * it, handed out the first creation's IDs again. The ledger still held the
 * first creation's ranges: the advice must be the highest end the store ever
 * recorded for the name. `tag create` with no `--start` on such a name is
 * refused (naming the safe start); an explicit `--start` below it is the
 * operator's choice, warned about.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  mysqlHarness,
  postgresHarness,
  probeMysql,
  probePostgres,
  probeRedis,
  redisHarness,
  type sqliteHarness,
} from '../contract/backends.js';
import { assertBuilt, type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

type Harness = Awaited<ReturnType<typeof postgresHarness>> | ReturnType<typeof sqliteHarness>;

const running: ServerProcess[] = [];
const dirs: string[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-recreate-ledger-'));
  dirs.push(d);
  return d;
}

/** Up to `count` IDs, or the error code the server answered instead. */
async function take(s: ServerProcess, tag: string, count: number): Promise<{ ids: bigint[]; error?: string }> {
  const r = await fetch(`${s.url}/v1/segment/${tag}?count=${count}`);
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  if (r.status !== 200) return { ids: [], error: body.error?.code ?? `HTTP ${r.status}` };
  return { ids: (body.ids ?? []).map((x) => BigInt(x)) };
}

function advisedStart(stdout: string): bigint {
  const m = /use --start ([0-9]+) or higher/.exec(stdout);
  if (!m) throw new Error(`no advice in ${JSON.stringify(stdout)}`);
  return BigInt(m[1] as string);
}

const max = (xs: bigint[]): bigint => xs.reduce((a, b) => (b > a ? b : a), 0n);

/** The sequence above on the store of `url`; answers the second delete's output for more checks. */
async function mistakeThenAdvice(url: string): Promise<string> {
  const dir = tmp();
  const tag = 'p2';
  const run = (args: string[]) => sequoia([...args, '--store', url]);
  const ok = (args: string[]) => {
    const r = run(args);
    expect(r.status, r.stderr).toBe(0);
    return r;
  };
  ok(['tag', 'create', tag, '--step', '10']);

  // --max-step 10: every range is the stored step.
  const first = await startServe(['--store', url, '--state-dir', join(dir, 'first'), '--max-step', '10']);
  running.push(first);
  const issued = (await take(first, tag, 25)).ids;
  expect(issued).toHaveLength(25);

  const firstDelete = ok(['tag', 'delete', tag]);
  expect(advisedStart(firstDelete.stdout)).toBeGreaterThan(max(issued));

  // The mistake: created again with no --start. Refused now, with the start that repeats nothing.
  const implicit = run(['tag', 'create', tag, '--step', '10']);
  expect.soft(implicit.status, implicit.stdout).toBe(2);
  expect.soft(implicit.stderr).toMatch(/--start [0-9]+ or higher/);
  if (implicit.status !== 0) {
    // The same mistake made explicitly goes through, with a warning.
    const explicit = ok(['tag', 'create', tag, '--step', '10', '--start', '1']);
    expect(explicit.stderr).toMatch(/warning: ranges up to ID [0-9]+ were taken under the name p2/);
  }

  // The server that served the first creation refuses the new one's ranges, once its buffer is spent.
  let refused: string | undefined;
  for (let i = 0; i < 10 && refused === undefined; i++) {
    const r = await take(first, tag, 5);
    issued.push(...r.ids);
    refused = r.error;
  }
  expect(refused).toBe('STORE_ROLLBACK_DETECTED');
  first.child.kill('SIGTERM');
  await first.exited;

  // Deleted again: the advice must still cover the first creation's IDs.
  const second = ok(['tag', 'delete', tag]);
  const start = advisedStart(second.stdout);
  ok(['tag', 'create', tag, '--step', '10', '--start', String(start)]);
  const fresh = await startServe(['--store', url, '--state-dir', join(dir, 'fresh'), '--max-step', '10']);
  running.push(fresh);
  const later = await take(fresh, tag, 20);
  fresh.child.kill('SIGTERM');
  await fresh.exited;
  expect(later.error).toBeUndefined();
  const seen = new Set(issued.map(String));
  expect(later.ids.filter((id) => seen.has(String(id)))).toEqual([]);
  expect(start).toBeGreaterThan(max(issued));
  expect(second.stdout).toMatch(/range ledger/);
  return second.stdout;
}

function sqliteUrl(): string {
  return `sqlite:${join(tmp(), 'ids.db')}`;
}

it('SQLite: tag delete advises a start above every ID the name handed out, across re-creations', async () => {
  await mistakeThenAdvice(sqliteUrl());
}, 180_000);

it('multi-store (2 SQLite files): the same, in IDs of the set', async () => {
  const d = tmp();
  await mistakeThenAdvice(`sqlite:${join(d, 'a.db')},sqlite:${join(d, 'b.db')}`);
}, 180_000);

it('SQLite: a ledger emptied (pruned) leaves max_id alone, and the advice says the ledger cannot vouch for older IDs', () => {
  const file = join(tmp(), 'ids.db');
  const url = `sqlite:${file}`;
  expect(sequoia(['tag', 'create', 'old', '--start', '500', '--store', url]).status).toBe(0);
  expect(sequoia(['gen', 'segment', '--tag', 'old', '--count', '3', '--store', url, '--state-dir', join(tmp(), 's')]).status).toBe(0);
  const db = new Database(file);
  db.prepare('DELETE FROM sequoia_ledger').run();
  db.close();
  const r = sequoia(['tag', 'delete', 'old', '--store', url]);
  expect(r.status, r.stderr).toBe(0);
  expect(advisedStart(r.stdout)).toBe(503n);
  expect(r.stdout).toMatch(/range ledger holds no range of this name/);
  expect(r.stdout).toMatch(/ledgerRetentionDays/);
});

const services: Array<[string, () => Promise<unknown>, () => Promise<Harness>]> = [
  ['PostgreSQL', probePostgres, postgresHarness],
  ['MariaDB', probeMysql, mysqlHarness],
  ['Redis', probeRedis, redisHarness],
];
for (const [name, probe, harness] of services) {
  const describeStore = await describeWithService(name, probe);
  describeStore(`${name}: tag delete advice across re-creations`, () => {
    it('advises a start above every ID the name handed out, across re-creations', async () => {
      const h = await harness();
      try {
        await mistakeThenAdvice(h.url as string);
      } finally {
        await h.cleanup();
      }
    }, 180_000);
  });
}
