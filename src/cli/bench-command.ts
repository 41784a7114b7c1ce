/**
 * `sequoia bench`: a quick in-process measurement on this machine, against
 * the limits in the same run (a bare counter; Node's crypto.randomUUID; the
 * twitter layout's 4,096 IDs per ms). The full side-by-side suite with the
 * peer libraries and HTTP is `npm run bench` in a checkout (BENCHMARKS.md).
 */
import { randomUUID } from 'node:crypto';
import { withIdService } from '../app/wiring.js';
import { getLayout } from '../core/snowflake/layout.js';
import { SnowflakeGenerator, type Wait } from '../core/snowflake/generator.js';
import { UuidV7Generator } from '../core/uuid/index.js';
import { systemClock } from '../core/clock.js';
import { systemRandom } from '../core/random.js';
import type { TagAllocator } from '../service/tag-allocator.js';

/** Calls per second of `fn` over about `ms` milliseconds. */
function rate(fn: () => unknown, ms: number): number {
  let n = 0;
  let sink: unknown;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 10_000; i++) sink = fn();
    n += 10_000;
    t = performance.now();
  }
  if (sink === Symbol.for('never')) console.log(sink);
  return (n / (t - t0)) * 1000;
}

/** The limit: a bare counter closure, in a loop of its own (a shared loop would make its call site megamorphic). */
function counterRate(ms: number): number {
  let c = 0;
  const next = () => ++c;
  let n = 0;
  let acc = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 10_000; i++) acc ^= next();
    n += 10_000;
    t = performance.now();
  }
  if (acc === -1) console.log(acc);
  return (n / (t - t0)) * 1000;
}

/** IDs per second from a tag handle, the way a hot caller loops: synchronous until a load must be awaited. */
async function segmentRate(order: TagAllocator, ms: number): Promise<number> {
  let n = 0;
  let acc = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 10_000; i++) {
      const v = order.next();
      acc ^= typeof v === 'number' ? v : Number(await v);
    }
    n += 10_000;
    t = performance.now();
  }
  if (acc === -1) console.log(acc);
  return (n / (t - t0)) * 1000;
}

/** Snowflake IDs per second; a full sequence answers a Wait until the next tick, which is waited out. */
function snowflakeRate(gen: SnowflakeGenerator, ms: number): number {
  let n = 0;
  let sink: string | Wait = '';
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 10_000; i++) {
      sink = gen.take();
      if (typeof sink === 'string') n++;
    }
    t = performance.now();
  }
  if (sink === 'never') console.log(sink);
  return (n / (t - t0)) * 1000;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
const fmt = (x: number): string => `${(x / 1e6).toFixed(2)} M/s`;

export async function runBench(rounds = 5, ms = 300): Promise<Array<{ name: string; perSecond: number; reference: string }>> {
  const v7 = new UuidV7Generator({ clock: systemClock, random: systemRandom });
  const flake = new SnowflakeGenerator({ layout: getLayout('twitter'), clock: systemClock });
  const runs: Record<string, number[]> = { counter: [], segment: [], randomUUID: [], v7: [], snowflake: [] };
  await withIdService({ store: 'memory:', stateDir: null }, async (service) => {
    await service.createTag({ tag: 'bench', step: 1_000_000 });
    const order = await service.allocator('bench');
    await order.next();
    for (let r = 0; r < rounds; r++) {
      runs.counter!.push(counterRate(ms));
      runs.segment!.push(await segmentRate(order, ms));
      runs.randomUUID!.push(rate(randomUUID, ms));
      runs.v7!.push(rate(() => v7.next(), ms));
      runs.snowflake!.push(snowflakeRate(flake, ms));
    }
  });
  const m = (k: string) => median(runs[k]!);
  return [
    {
      name: 'segment next() (buffered)',
      perSecond: m('segment'),
      reference: `${((m('segment') / m('counter')) * 100).toFixed(0)}% of a bare counter (${fmt(m('counter'))})`,
    },
    {
      name: 'UUIDv7 text',
      perSecond: m('v7'),
      reference: `${(m('v7') / m('randomUUID')).toFixed(2)}× crypto.randomUUID (${fmt(m('randomUUID'))})`,
    },
    {
      name: 'snowflake twitter',
      perSecond: m('snowflake'),
      reference: `${((m('snowflake') / 4_096_000) * 100).toFixed(0)}% of the layout cap (4.10 M/s)`,
    },
  ];
}

export async function printBench(): Promise<void> {
  for (const r of await runBench()) console.log(`${r.name.padEnd(28)} ${fmt(r.perSecond).padStart(11)}   ${r.reference}`);
}
