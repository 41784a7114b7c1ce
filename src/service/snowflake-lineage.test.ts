import { describe, expect, it } from 'vitest';
import { LeaseWorkerIdProvider } from '../adapters/lease/lease-worker-id-provider.js';
import { MemoryWorkerLeaseStore } from '../adapters/memory/memory-worker-lease-store.js';
import { TickReservingProvider, type TickRecord } from '../adapters/state-dir/tick-reserving-provider.js';
import { SequoiaError } from '../core/errors.js';
import { TWITTER_EPOCH_MS, type Layout, defineLayouts, getLayout } from '../core/snowflake/layout.js';
import { ManualClock } from '../../test/helpers/fakes.js';
import { SnowflakeService } from './snowflake-service.js';

const CUTOVER = Date.parse('2027-01-01T00:00:00Z');
const LAYOUTS = defineLayouts(
  {
    'orders-2027': {
      epochMs: TWITTER_EPOCH_MS,
      timeBits: 41,
      fields: [
        { name: 'worker', bits: 12, role: 'node' },
        { name: 'sequence', bits: 10, role: 'sequence' },
      ],
    },
    orders: { lineage: [{ layout: 'twitter' }, { layout: 'orders-2027', from: '2027-01-01T00:00:00Z' }] },
  },
  { nowMs: CUTOVER - 10_000 },
);
const orders = LAYOUTS.get('orders') as Layout;

/** A state dir in memory: the ticks of (space, worker id). */
function memoryTicks(): TickRecord & { ticks: Map<string, number> } {
  const ticks = new Map<string, number>();
  return {
    ticks,
    lastTick: async (space, w) => ticks.get(`${space}|${w}`),
    highestTick: async (space) => {
      const all = [...ticks].filter(([k]) => k.startsWith(`${space}|`)).map(([, t]) => t);
      return all.length ? Math.max(...all) : undefined;
    },
    recordTick: async (space, w, tick, exact) => {
      const k = `${space}|${w}`;
      if (exact || (ticks.get(k) ?? -2) < tick) ticks.set(k, tick);
    },
    close: async () => {},
  };
}

function service(clock: ManualClock, ticks: TickRecord, store = new MemoryWorkerLeaseStore()): SnowflakeService {
  return new SnowflakeService({
    provider: new TickReservingProvider(new LeaseWorkerIdProvider(store, { ttlMs: 3000 }), ticks),
    layouts: LAYOUTS,
    defaultLayout: 'orders',
    clock,
  });
}

describe('a lineage in the snowflake service', () => {
  it('switches to the next version at the cutover: every later ID above every earlier one, each decoded by its version', async () => {
    const clock = new ManualClock(CUTOVER - 3);
    const ticks = memoryTicks();
    const s = service(clock, ticks);
    await s.start();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(...(await s.nextMany(undefined, 50)));
      clock.advance(1);
    }
    const before = ids.slice(0, 150).map(BigInt);
    const after = ids.slice(150).map(BigInt);
    expect(new Set(ids).size).toBe(300);
    const maxBefore = before.reduce((a, b) => (a > b ? a : b));
    expect(after.every((id) => id > maxBefore)).toBe(true);
    expect(ids.slice(0, 150).every((id) => s.explain(id).version === 1)).toBe(true);
    expect(ids.slice(150).every((id) => s.explain(id).version === 2 && s.explain(id).layout === 'orders-2027')).toBe(true);
    // The version 1 worker id went back with a tick before the cutover.
    const v1 = orders.lineage?.versions[0];
    expect(await ticks.highestTick?.(getLayout('twitter').spaceKey)).toBeLessThanOrEqual(v1?.lastTick as number);
    await s.close();
  });

  it('a clock stepped back across the cutover waits on version 2 instead of going back to version 1', async () => {
    const clock = new ManualClock(CUTOVER);
    const s = service(clock, memoryTicks());
    const a = await s.next();
    clock.t = CUTOVER - 5;
    const b = s.nextMany(undefined, 1);
    setTimeout(() => (clock.t = CUTOVER + 1), 20);
    const [later] = await b;
    expect(BigInt(later as string)).toBeGreaterThan(BigInt(a));
    expect(s.explain(later as string).version).toBe(2);
    await s.close();
  });

  it('refuses to start when this server issued version 1 past the cutover (the lineage was added late)', async () => {
    const clock = new ManualClock(CUTOVER + 60_000);
    const ticks = memoryTicks();
    const plain = new SnowflakeService({
      provider: new TickReservingProvider(new LeaseWorkerIdProvider(new MemoryWorkerLeaseStore(), { ttlMs: 3000 }), ticks),
      clock,
    });
    await plain.next('twitter');
    await plain.close();
    const s = service(clock, ticks);
    const e = await s.start().then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(SequoiaError);
    expect((e as SequoiaError).code).toBe('INVALID_ARGUMENT');
    expect((e as Error).message).toMatch(
      /^layout "orders": version 1 \(twitter\) has issued up to 2027-01-01T00:01:00.001Z .* past version 2's cutover at 2027-01-01T00:00:00.000Z/,
    );
    await s.close();
  });
});
