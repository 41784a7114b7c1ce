/**
 * docs/audit.md runs: every `sequoia …` line in its code blocks is run, in
 * order, against a real incident on a real SQLite store (and PostgreSQL for
 * the --db line): the doc's placeholders (store URL, database URLs, file
 * names) become this test's, and the fence's `--to` becomes what the audit
 * printed. The page's own numbers are examples; its commands are not.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { compose, getLayout } from '../../src/core/snowflake/layout.js';
import { ROOT, sequoia as run } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

/** Commands without --state-dir get a throw-away one, never ./data in the checkout. */
const defaultState = join(tmpdir(), `sequoia-audit-state-${process.pid}`);
const sequoia = (args: string[]) => run(args, { SEQUOIA_STATE_DIR: defaultState });

const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
const describePg = await describeWithService('postgres', async () => {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.end();
});

/** The `sequoia …` command lines of the page's code blocks that say this test runs them, in order. */
function commandsOfPage(): string[] {
  const text = readFileSync(join(ROOT, 'docs/audit.md'), 'utf8');
  const out: string[] = [];
  for (const block of text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)) {
    if (!(block[1] as string).includes('runbook.test.ts')) continue;
    for (const line of (block[1] as string).split('\n')) if (line.startsWith('sequoia ')) out.push(line);
  }
  return out;
}

function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => (m[1] ?? m[2]) as string);
}

describePg('docs/audit.md, every command', () => {
  let dir: string;
  let admin: pg.Client;
  const table = `runbook_orders_${process.pid}`;
  const pgStoreTable = `runbook_alloc_${process.pid}`;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-runbook-'));
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`DROP TABLE IF EXISTS ${table}; DROP TABLE IF EXISTS ${pgStoreTable}`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
    rmSync(defaultState, { recursive: true, force: true });
  });

  it('suspected duplicate → audit → fence → verify, as the page says', async () => {
    const db = join(dir, 'store.db');
    const store = `sqlite:${db}`;
    const pgStore = `${PG_URL}?table=${pgStoreTable}`;
    const state = join(dir, 'state');
    const ok = (args: string[]) => {
      const r = sequoia(args);
      expect(r.status, r.stderr + r.stdout).toBe(0);
      return r.stdout.trim();
    };
    // The incident: IDs issued, the store snapshotted, more issued, the snapshot restored, one duplicate row.
    for (const s of [store, pgStore])
      ok(['tag', 'create', 'orders', '--step', '100', '--store', s, '--state-dir', join(state, String(s.length))]);
    const gen = (s: string, n: number) =>
      ok(['gen', 'segment', '--tag', 'orders', '--count', String(n), '--store', s, '--state-dir', join(state, String(s.length))]).split(
        '\n',
      );
    const first = gen(store, 150);
    copyFileSync(db, `${db}.snap`);
    const second = gen(store, 400);
    rmSync(`${db}-wal`, { force: true });
    rmSync(`${db}-shm`, { force: true });
    copyFileSync(`${db}.snap`, db);
    const ids = [...first, ...second, first[9] as string];
    writeFileSync(join(dir, 'orders-ids.txt'), ids.join('\n') + '\n');
    writeFileSync(join(dir, 'export.csv'), 'id,total\n' + ids.map((id) => `${id},1`).join('\n') + '\n');
    // The same on PostgreSQL: the business table holds every ID the PostgreSQL store issued, one twice.
    const pgIds = gen(pgStore, 120);
    await admin.query(`CREATE TABLE ${table} (id bigint NOT NULL)`);
    await admin.query(`INSERT INTO ${table} SELECT unnest($1::bigint[])`, [[...pgIds, pgIds[0]]]);

    // Snowflake IDs leased from the same store, and one from a worker id nobody held.
    const flakes = ok(['gen', 'snowflake', '--layout', 'twitter', '--count', '20', '--store', store]).split('\n');
    const twitter = getLayout('twitter');
    const tickNow = Math.floor((Date.now() - twitter.epochMs) / twitter.unitMs);
    const stranger = compose(twitter, tickNow - 1000, { datacenter: 31, worker: 31, sequence: 0 }).toString();
    writeFileSync(join(dir, 'flakes.txt'), [...flakes, stranger].join('\n') + '\n');

    const commands = commandsOfPage();
    expect(commands.length).toBe(9);
    let printedFence: string | undefined;
    const seen: string[] = [];
    for (const line of commands) {
      const w = words(line)
        .slice(1)
        .map((x) =>
          x === 'sqlite:/var/lib/sequoia/store.db'
            ? store
            : x === 'postgres://app@db/shop'
              ? PG_URL
              : x === 'postgres://sequoia@db/sequoia'
                ? pgStore
                : x === 'SELECT id FROM orders'
                  ? `SELECT id FROM ${table}`
                  : x === 'orders-ids.txt' || x === 'export.csv' || x === 'flakes.txt'
                    ? join(dir, x)
                    : x === '1864212300848955392'
                      ? (flakes[0] as string)
                      : x,
        );
      if (w[0] === 'fence') {
        // The page's command is the printed one, with the audit's numbers.
        expect(printedFence, 'the page fences after an audit printed a fence').toBeDefined();
        expect(w.slice(0, 3)).toEqual(['fence', 'orders', '--to']);
        w[3] = (/--to (\d+)/.exec(printedFence as string) as RegExpExecArray)[1] as string;
        expect(ok(w)).toMatch(/^fenced orders/);
        seen.push('fence');
        continue;
      }
      if (w[0] === 'explain' && w.includes('--tag')) {
        // The page's ID is an example: trace the duplicate the audit found.
        w[1] = first[9] as string;
        const traced = JSON.parse(ok(w)) as { covered: boolean; message: string; ranges: Array<{ kind: string }> };
        expect(traced.covered).toBe(true);
        expect(traced.message).toMatch(/^issued \[\d+, \d+\] \(\d+ IDs\) by \S+ pid \d+ .* fence epoch 0/);
        seen.push('explain-tag');
        continue;
      }
      const r = sequoia(w);
      if (w[0] === 'audit' && w.includes('--layout')) {
        expect(r.status, r.stderr).toBe(1);
        expect(r.stdout).toMatch(/FINDING unheld-worker-id: 1 IDs/);
        expect(r.stdout).toContain(stranger);
        seen.push('audit-layout');
        continue;
      }
      if (w[0] === 'explain') {
        expect(r.status, r.stderr).toBe(0);
        const lease = (JSON.parse(r.stdout) as { lease: { heldBy: Array<{ pid: number }>; message: string } }).lease;
        expect(lease.heldBy).toHaveLength(1);
        expect(lease.message).toMatch(/was held by/);
        seen.push('explain');
        continue;
      }
      if (w[0] === 'audit') {
        const verify = printedFence !== undefined && seen.includes('fence');
        if (w.includes('--db')) {
          expect(r.status, r.stderr).toBe(1);
          expect(r.stdout).toContain(`${pgIds[0]} ×2`);
          seen.push('audit-db');
        } else if (!verify) {
          expect(r.status, r.stderr).toBe(1);
          expect(r.stdout).toContain(`${first[9]} ×2`);
          const run = /^ {2}run: (sequoia fence .*)$/m.exec(r.stdout);
          expect(run, r.stdout).not.toBeNull();
          printedFence = (run as RegExpExecArray)[1];
          seen.push('audit');
        } else {
          // Verify: the store finding is gone (the duplicate row is data to fix, step 3).
          expect(r.stdout).not.toContain('above-store-max');
          seen.push('verify');
        }
        continue;
      }
      expect(r.status, r.stderr).toBe(0);
      if (w[0] === 'gen') {
        const highest = second.map(BigInt).reduce((a, b) => (a > b ? a : b));
        for (const id of r.stdout.trim().split('\n')) expect(BigInt(id)).toBeGreaterThan(highest);
        seen.push('gen');
      }
    }
    expect(seen).toEqual(['audit', 'audit', 'audit-db', 'audit-layout', 'explain', 'fence', 'explain-tag', 'verify', 'gen']);
  }, 240_000);
});
