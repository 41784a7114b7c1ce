/**
 * What operators do to a running server (issue 28, items 5–7), on real
 * `sequoia serve` processes and the real SQLite store:
 * - a fence reopens a refused tag although the wall clock was stepped back a
 *   day after the refusal (intervals run on the monotonic clock);
 * - backup-worker keeps its backup across a clean restart after the clock
 *   went a day ahead and back (each worker id is released with its own tick);
 * - a worker-id pool that is used up stops snowflake only: the server starts
 *   and serves segment IDs, snowflake refuses with a stable code, and
 *   one-shot `gen snowflake` refuses worker-node instead of burning an id.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { fakeClockMissing, SteppedClock } from '../helpers/fake-clock.js';
import { servicesRequired } from '../helpers/services.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

const DAY_S = 86_400;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const s = await startServe(args, env);
  running.push(s);
  return s;
}

async function getJson(url: string): Promise<{ status: number; body: { ids?: string[]; error?: { code: string; message: string } } }> {
  const r = await fetch(url);
  return { status: r.status, body: (await r.json()) as { ids?: string[]; error?: { code: string; message: string } } };
}

async function stop(s: ServerProcess): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

const missing = fakeClockMissing();
if (missing && servicesRequired) throw new Error(`stepped-clock tests need libfaketime: ${missing}`);
if (missing) console.warn(`[sequoia tests] SKIPPING stepped-clock tests: ${missing}`);
const describeClock = describe.skipIf(missing !== undefined);

describeClock('a wall clock stepped back (libfaketime)', () => {
  it('a fence reopens a tag refused while the clock was a day ahead, after NTP stepped the clock back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-fence-step-'));
    const db = join(dir, 'store.db');
    const store = `sqlite:${db}`;
    expect(sequoia(['tag', 'create', 'orders', '--step', '10', '--store', store]).status).toBe(0);
    const clock = new SteppedClock(dir);
    clock.set(DAY_S);
    const server = await start(['--store', store, '--state-dir', join(dir, 'state'), '--log-level', 'info'], clock.env());

    const first = await getJson(`${server.url}/v1/segment/orders?count=5`);
    expect(first.status).toBe(200);
    // The store is restored from an old backup: max_id goes back to where it began.
    const sql = new Database(db);
    sql.prepare("UPDATE sequoia_alloc SET max_id = 1 WHERE tag = 'orders'").run();
    sql.close();
    let refused: { status: number; body: { error?: { code: string } } } | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const r = await getJson(`${server.url}/v1/segment/orders?count=5`);
      if (r.status !== 200) refused = r;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.body.error?.code).toBe('STORE_ROLLBACK_DETECTED');
    // Another refused request: the fence epoch is read (at the day-ahead time) and found unchanged.
    await sleep(1100);
    expect((await getJson(`${server.url}/v1/segment/orders`)).body.error?.code).toBe('STORE_ROLLBACK_DETECTED');

    await clock.step(0); // NTP steps the clock back a day
    const fence = sequoia(['fence', 'orders', '--to', '1000', '--store', store, '--state-dir', join(dir, 'state')]);
    expect(fence.stderr).toBe('');
    expect(fence.status).toBe(0);

    // Within a few seconds of the fence the running server serves again, from above the fence.
    let after: { status: number; body: { ids?: string[]; error?: { code: string } } } | undefined;
    const t0 = Date.now();
    while (Date.now() - t0 < 6000) {
      after = await getJson(`${server.url}/v1/segment/orders`);
      if (after.status === 200) break;
      await sleep(200);
    }
    expect(after?.body.error?.code).toBeUndefined();
    expect(after?.status).toBe(200);
    expect(BigInt(after?.body.ids?.[0] ?? '0')).toBeGreaterThanOrEqual(1000n);
    await stop(server);
  }, 60_000);

  it('backup-worker: after the clock went a day ahead and back, a clean restart still finds its backup worker id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-backup-step-'));
    const clock = new SteppedClock(dir);
    const args = [
      '--store',
      `sqlite:${join(dir, 'store.db')}`,
      '--state-dir',
      join(dir, 'state'),
      '--clock-policy',
      'backup-worker',
      '--log-level',
      'info',
    ];
    const seen = new Set<string>();
    const take = async (s: ServerProcess): Promise<{ status: number; code?: string; message?: string }> => {
      const r = await getJson(`${s.url}/v1/snowflake?count=100`);
      for (const id of r.body.ids ?? []) {
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
      return { status: r.status, code: r.body.error?.code, message: r.body.error?.message };
    };

    const first = await start(args, clock.env());
    expect(await take(first)).toEqual({ status: 200 });
    await clock.step(DAY_S);
    expect(await take(first)).toEqual({ status: 200 });
    await clock.step(0);
    expect(await take(first)).toEqual({ status: 200 });
    await expect.poll(() => first.output(), { timeout: 5000 }).toContain('switched to a backup worker id');
    await stop(first);
    expect(first.output()).toContain('snowflake worker id released');

    const second = await start(args, clock.env());
    for (let i = 0; i < 5; i++) expect(await take(second)).toEqual({ status: 200 });
    await stop(second);
  }, 60_000);
});

describe('a used-up worker-id pool', () => {
  /** A layout with two worker ids; worker-node takes row ids from 1, so one start uses its pool up. */
  function smallLayoutConfig(dir: string): string {
    const file = join(dir, 'sequoia.json');
    writeFileSync(
      file,
      JSON.stringify({
        layouts: {
          tiny: {
            epochMs: 1288834974657,
            timeBits: 41,
            fields: [
              { name: 'worker', bits: 1, role: 'node' },
              { name: 'sequence', bits: 21, role: 'sequence' },
            ],
          },
        },
      }),
    );
    return file;
  }

  it('one-shot `gen snowflake` refuses worker-node (exit 2) instead of taking a worker id for good', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-gen-node-'));
    const store = `sqlite:${join(dir, 'store.db')}`;
    const config = smallLayoutConfig(dir);
    for (let i = 0; i < 3; i++) {
      const r = sequoia([
        'gen',
        'snowflake',
        '--layout',
        'tiny',
        '--worker-id-provider',
        'worker-node',
        '--store',
        store,
        '--config',
        config,
      ]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('worker-node');
      expect(r.stdout).toBe('');
    }
    // Nothing was taken: a server on worker-node still gets an id.
    const sql = new Database(join(dir, 'store.db'), { fileMustExist: false });
    const table = sql.prepare("SELECT name FROM sqlite_master WHERE name = 'sequoia_worker_node'").get();
    const rows = table ? (sql.prepare('SELECT COUNT(*) AS n FROM sequoia_worker_node').get() as { n: number }).n : 0;
    sql.close();
    expect(rows).toBe(0);
  });

  it('a server starts and serves segment IDs when snowflake can get no worker id; snowflake refuses with a stable code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-pool-'));
    const store = `sqlite:${join(dir, 'store.db')}`;
    const config = smallLayoutConfig(dir);
    expect(sequoia(['tag', 'create', 'orders', '--store', store]).status).toBe(0);
    const args = [
      '--store',
      store,
      '--state-dir',
      join(dir, 'state'),
      '--config',
      config,
      '--snowflake-layout',
      'tiny',
      '--worker-id-provider',
      'worker-node',
    ];
    // One start takes the layout's last id for good (worker-node never reuses one).
    const first = await start(args);
    expect((await getJson(`${first.url}/v1/snowflake`)).status).toBe(200);
    await stop(first);

    const s = await start(args);
    await expect.poll(() => s.output(), { timeout: 5000 }).toContain('snowflake IDs unavailable');
    const seg = await getJson(`${s.url}/v1/segment/orders?count=3`);
    expect(seg.status).toBe(200);
    expect(seg.body.ids).toHaveLength(3);
    expect((await fetch(`${s.url}/api/segment/get/orders`)).status).toBe(200);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    for (const path of ['/v1/snowflake', '/v1/snowflake?count=5', '/api/snowflake/get/x']) {
      const r = await fetch(`${s.url}${path}`);
      expect(r.status).toBe(503);
      expect(await r.text()).toContain('ID_SPACE_EXHAUSTED');
    }
    // Refused without taking another id each time (the failure is kept for a while).
    const sql = new Database(join(dir, 'store.db'), { readonly: true });
    const rows = (sql.prepare('SELECT COUNT(*) AS n FROM sequoia_worker_node').get() as { n: number }).n;
    sql.close();
    expect(rows).toBeLessThanOrEqual(4);
    await stop(s);
  }, 60_000);
});
