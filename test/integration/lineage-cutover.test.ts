/**
 * A layout lineage switching under load (issue 43): three real `sequoia serve`
 * processes on one SQLite store, each with its own state dir, issue
 * `orders` IDs across a cutover a few seconds ahead:
 * - B is SIGKILLed just before the cutover and started again on the same
 *   state dir (its version 1 reservation must stay before the cutover, or the
 *   start check refuses it);
 * - C runs under libfaketime and, once it issues version 2, has its clock
 *   stepped back across the cutover (policy logical): it stays on version 2.
 * Every ID is unique, every version 2 ID is above every version 1 ID, each
 * server's IDs rise, and each ID decodes (library, /v1/explain, Leaf's decode
 * route, `sequoia explain`) with the version whose time range holds it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { explainId } from '../../src/core/snowflake/explain.js';
import { type Layout, defineLayouts } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { SteppedClock, fakeClockMissing } from '../helpers/fake-clock.js';
import { servicesRequired } from '../helpers/services.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

const missing = fakeClockMissing();
if (missing && servicesRequired) throw new Error(`the lineage test steps a clock with libfaketime: ${missing}`);
if (missing) console.warn(`[sequoia tests] SKIPPING the lineage cutover test: ${missing}`);

/** The cutover: whole seconds, far enough ahead for three servers to start and issue version 1 IDs. */
const CUTOVER_MS = Math.ceil((Date.now() + 20_000) / 1000) * 1000;
const CONFIG = {
  layouts: {
    'orders-wide': {
      epochMs: 1288834974657,
      timeBits: 41,
      fields: [
        { name: 'worker', bits: 12, role: 'node' },
        { name: 'sequence', bits: 10, role: 'sequence' },
      ],
    },
    orders: { lineage: [{ layout: 'twitter' }, { layout: 'orders-wide', from: new Date(CUTOVER_MS).toISOString() }] },
  },
  snowflakeLayout: 'orders',
};
const orders = defineLayouts(CONFIG.layouts).get('orders') as Layout;

interface Issued {
  readonly server: string;
  readonly ids: string[];
}

async function take(s: ServerProcess, name: string, log: Issued[]): Promise<string[]> {
  const r = await fetch(`${s.url}/v1/snowflake?count=200`);
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  expect(r.status, JSON.stringify(body)).toBe(200);
  const ids = body.ids as string[];
  log.push({ server: name, ids });
  return ids;
}

describe.skipIf(missing !== undefined)('a layout lineage across its cutover, three servers, a restart, a clock stepped back', () => {
  it('0 repeats, every version 2 ID above every version 1 ID, each decoded with its version', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-lineage-'));
    const config = join(dir, 'sequoia.json');
    writeFileSync(config, JSON.stringify(CONFIG));
    const store = `sqlite:${join(dir, 'store.db')}`;
    const args = (n: string, extra: string[] = []) => ['--store', store, '--state-dir', join(dir, n), '--config', config, ...extra];
    const clock = new SteppedClock(dir);
    const [a, b0, c] = await Promise.all([
      startServe(args('a')),
      startServe(args('b')),
      startServe(args('c', ['--clock-policy', 'logical']), clock.env()),
    ]);
    running.push(a as ServerProcess, b0 as ServerProcess, c as ServerProcess);
    let b = b0 as ServerProcess;
    const log: Issued[] = [];
    const version = (id: string) => explainId(id, orders).version;

    // Load on all three until the cutover is near; then B crashes and comes back.
    while (Date.now() < CUTOVER_MS - 600) {
      await Promise.all([take(a as ServerProcess, 'a', log), take(b, 'b', log), take(c as ServerProcess, 'c', log)]);
    }
    b.child.kill('SIGKILL');
    await b.exited;
    const restarted = startServe(args('b'));
    // A and C go on through the cutover while B starts again.
    let cOnV2 = false;
    while (!cOnV2) {
      await take(a as ServerProcess, 'a', log);
      cOnV2 = (await take(c as ServerProcess, 'c', log)).some((id) => version(id) === 2);
    }
    b = await restarted;
    running.push(b);
    // C's clock goes back 3 s, before the cutover: it must go on in version 2.
    clock.set(-3);
    for (let i = 0; i < 5; i++) await take(c as ServerProcess, 'c', log);
    clock.set(0);
    for (let i = 0; i < 3; i++) {
      await Promise.all([take(a as ServerProcess, 'a', log), take(b, 'b', log), take(c as ServerProcess, 'c', log)]);
    }

    const all = log.flatMap((r) => r.ids);
    expect(new Set(all).size).toBe(all.length);
    const v1 = all.filter((id) => version(id) === 1).map(BigInt);
    const v2 = all.filter((id) => version(id) === 2).map(BigInt);
    expect(v1.length).toBeGreaterThan(0);
    expect(v2.length).toBeGreaterThan(0);
    const maxV1 = v1.reduce((x, y) => (x > y ? x : y));
    const minV2 = v2.reduce((x, y) => (x < y ? x : y));
    expect(minV2 > maxV1).toBe(true);
    // The version is the one in force at the ID's time, and each server's IDs rise (none after the switch goes back).
    for (const id of all) {
      const e = explainId(id, orders);
      expect(e.version, id).toBe(e.timestampMs >= CUTOVER_MS ? 2 : 1);
    }
    for (const name of ['a', 'b', 'c']) {
      const mine = log.filter((r) => r.server === name).flatMap((r) => r.ids.map(BigInt));
      expect(
        mine.some((id) => explainId(id.toString(), orders).version === 1),
        name,
      ).toBe(true);
      expect(
        mine.some((id) => explainId(id.toString(), orders).version === 2),
        name,
      ).toBe(true);
      if (name !== 'b')
        expect(
          mine.every((id, i) => i === 0 || id > (mine[i - 1] as bigint)),
          name,
        ).toBe(true);
    }

    // The servers' decoders and the CLI say the same.
    const lastV1 = maxV1.toString();
    const firstV2 = minV2.toString();
    const ex = (await (await fetch(`${a?.url}/v1/explain/${firstV2}`)).json()) as Record<string, unknown>;
    expect(ex).toMatchObject({ lineage: 'orders', version: 2, layout: 'orders-wide' });
    const leaf = (await (await fetch(`${a?.url}/api/decode/snowflakeId?snowflakeId=${lastV1}`)).json()) as Record<string, unknown>;
    expect(leaf).toMatchObject({ layout: 'twitter', version: '1' });
    const cli = sequoia(['explain', firstV2, '--layout', 'orders', '--config', config]);
    expect(cli.status, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ lineage: 'orders', version: 2, layout: 'orders-wide' });
  });

  it(
    'a lineage added after its cutover passed is refused at start: this server issued version 1 past it',
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-lineage-late-'));
      const store = `sqlite:${join(dir, 'store.db')}`;
      const base = ['--store', store, '--state-dir', join(dir, 'state')];
      const plain = await startServe(base);
      running.push(plain);
      expect((await fetch(`${plain.url}/v1/snowflake?layout=twitter`)).status).toBe(200);
      plain.child.kill('SIGTERM');
      expect(await plain.exited).toBe(0);
      const config = join(dir, 'sequoia.json');
      const from = new Date(Date.now() - 3_600_000).toISOString();
      writeFileSync(
        config,
        JSON.stringify({
          ...CONFIG,
          layouts: { ...CONFIG.layouts, orders: { lineage: [{ layout: 'twitter' }, { layout: 'orders-wide', from }] } },
        }),
      );
      const late = await startServe([...base, '--config', config]).then(
        (s) => {
          running.push(s);
          return s;
        },
        (e: unknown) => e as Error,
      );
      // The server refuses to start (exit 2), saying why.
      expect(late).toBeInstanceOf(Error);
      expect((late as Error).message).toMatch(/^server exited \(2\) before listening/);
      expect((late as Error).message).toMatch(
        /layout "orders": version 1 \(twitter\) has issued up to .* past version 2's cutover at .*; move the cutover after/,
      );
    },
  );
});
