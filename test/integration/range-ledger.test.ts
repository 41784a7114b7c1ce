/**
 * The range ledger on real processes: a server on SQLite (its store in a
 * worker thread) answers `GET /v1/tags/{tag}/ranges?containing=ID` with the
 * range, server (its own pid), time and fence epoch; two servers on one file
 * are SIGKILLed mid-load and every ID any client received is covered by a
 * ledger row (`sequoia audit` finds no foreign ID and no duplicate), and
 * `sequoia explain ID --tag` names the killed server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const ADMIN = 'admin-token-ledger-0123456789';
let dir: string;
const servers: ServerProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-ledger-'));
});
afterAll(async () => {
  for (const s of servers) {
    s.child.kill('SIGKILL');
    await s.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function json(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url, { headers });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const admin = { authorization: `Bearer ${ADMIN}` };

describe('range ledger, real processes on SQLite', () => {
  it('the ranges route names the range, server, time and fence epoch; says plainly when nothing covers an ID', async () => {
    const store = `sqlite:${join(dir, 'route.db')}`;
    expect(sequoia(['tag', 'create', 'orders', '--step', '50', '--store', store, '--state-dir', join(dir, 'route-cli')]).status).toBe(0);
    const s = await startServe(['--store', store, '--state-dir', join(dir, 'route-state'), '--admin-token', ADMIN]);
    servers.push(s);
    const ids = (await json(`${s.url}/v1/segment/orders?count=7`)).body.ids as string[];
    const r = await json(`${s.url}/v1/tags/orders/ranges?containing=${ids[3]}`, admin);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ tag: 'orders', id: ids[3], ledger: true, covered: true });
    const ranges = r.body.ranges as Array<Record<string, unknown>>;
    expect(ranges).toHaveLength(1);
    expect(ranges[0]).toMatchObject({ kind: 'allocate', first: '1', last: '50', stride: 1, step: 50, fenceEpoch: 0 });
    expect(ranges[0]?.server).toMatchObject({
      pid: s.child.pid,
      version: expect.any(String),
      instance: expect.stringMatching(/^[0-9a-f]+$/),
    });
    expect(Math.abs(Date.parse(ranges[0]?.time as string) - Date.now())).toBeLessThan(60_000);

    const none = await json(`${s.url}/v1/tags/orders/ranges?containing=123456789`, admin);
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ covered: false, ranges: [] });
    expect(none.body.message).toMatch(/^no range in the ledger covers 123456789 of tag orders/);

    expect((await json(`${s.url}/v1/tags/orders/ranges?containing=abc`, admin)).body).toMatchObject({
      error: { code: 'INVALID_ARGUMENT' },
    });
    expect((await json(`${s.url}/v1/tags/orders/ranges`, admin)).status).toBe(400);
    expect((await json(`${s.url}/v1/tags/orders/ranges?containing=9223372036854775808`, admin)).status).toBe(400);
    expect((await json(`${s.url}/v1/tags/orders/ranges?containing=1`)).status).toBe(401);
  }, 120_000);

  it('servers SIGKILLed mid-load: every ID a client received is covered by a ledger row', async () => {
    const store = `sqlite:${join(dir, 'kill.db')}`;
    expect(sequoia(['tag', 'create', 'pay', '--step', '20', '--store', store, '--state-dir', join(dir, 'kill-cli')]).status).toBe(0);
    const pair = await Promise.all([0, 1].map((i) => startServe(['--store', store, '--state-dir', join(dir, `kill-state-${i}`)])));
    servers.push(...pair);
    const got: string[] = [];
    let stop = false;
    const load = pair.map(async (s) => {
      while (!stop) {
        try {
          const r = await fetch(`${s.url}/v1/segment/pay?count=13`);
          if (r.status === 200) got.push(...((await r.json()) as { ids: string[] }).ids);
        } catch {
          return; // killed
        }
      }
    });
    await new Promise((r) => setTimeout(r, 1500));
    for (const s of pair) s.child.kill('SIGKILL');
    stop = true;
    await Promise.all(load);
    await Promise.all(pair.map((s) => s.exited));
    expect(got.length).toBeGreaterThan(100);

    const file = join(dir, 'pay-ids.txt');
    writeFileSync(file, got.join('\n') + '\n');
    const audit = sequoia(['audit', file, '--tag', 'pay', '--store', store, '--json']);
    expect(audit.status, audit.stdout + audit.stderr).toBe(0);
    const report = JSON.parse(audit.stdout) as { clean: boolean; notChecked: string[]; summary: { distinct: number } };
    expect(report).toMatchObject({ clean: true, notChecked: [] });
    expect(report.summary.distinct).toBe(got.length);

    // Any one of them, traced: issued by one of the killed servers.
    const last = got[got.length - 1] as string;
    const ex = sequoia(['explain', last, '--tag', 'pay', '--store', store]);
    expect(ex.status, ex.stderr).toBe(0);
    const traced = JSON.parse(ex.stdout) as { covered: boolean; ranges: Array<{ kind: string; server: { pid: number } }> };
    expect(traced.covered).toBe(true);
    const issued = traced.ranges.filter((e) => e.kind === 'allocate');
    expect(issued).toHaveLength(1);
    expect(pair.map((s) => s.child.pid)).toContain(issued[0]?.server.pid);

    // A planted foreign ID and a planted duplicate are found, the duplicate with its entry.
    const foreign = String(BigInt(got.reduce((a, b) => (BigInt(a) > BigInt(b) ? a : b))) + 10_000_000n);
    writeFileSync(file, [...got, got[0], foreign].join('\n') + '\n');
    const bad = sequoia(['audit', file, '--tag', 'pay', '--store', store]);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(/FINDING duplicates: 1 IDs occur more than once/);
    expect(bad.stdout).toMatch(/\n {4}issued \[\d+, \d+\] \(\d+ IDs\) by \S+ pid \d+/);
    expect(bad.stdout).toMatch(/FINDING foreign: 1 IDs are covered by no range in the ledger/);
    expect(bad.stdout).toContain(`  ${foreign}`);
  }, 180_000);
});
