import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../test/helpers/fakes.js';
import { InvalidArgumentError } from '../errors.js';
import { explainId } from './explain.js';
import { SnowflakeGenerator } from './generator.js';
import { TWITTER_EPOCH_MS, type Layout, compose, decompose, defineLayouts, getLayout } from './layout.js';
import { checkChange, versionAt, versionOf } from './lineage.js';

const CUTOVER = Date.parse('2027-01-01T00:00:00Z');
const fields = (worker: number, seq: number) => [
  { name: 'worker', bits: worker, role: 'node' },
  { name: 'sequence', bits: seq, role: 'sequence' },
];
/** The worked example of docs/ids.md: twitter, then 12 worker bits (10 of sequence) from 2027. */
const CONFIG = {
  'orders-2027': { epochMs: TWITTER_EPOCH_MS, timeBits: 41, fields: fields(12, 10) },
  orders: { lineage: [{ layout: 'twitter' }, { layout: 'orders-2027', from: '2027-01-01T00:00:00Z' }] },
};
const custom = (spec: Record<string, unknown>): Layout =>
  defineLayouts({ x: { epochMs: TWITTER_EPOCH_MS, timeBits: 41, ...spec } }).get('x') as Layout;

describe('checkChange: a proposed next version against the current one', () => {
  const twitter = getLayout('twitter');

  it('accepts more worker bits from the sequence, same epoch and time bits', () => {
    const c = checkChange(twitter, custom({ fields: fields(12, 10) }), CUTOVER);
    expect(c.problems).toEqual([]);
    expect(c.safe).toBe(true);
    expect(BigInt(c.nextFirstId as string)).toBe(BigInt(c.currentMaxId) + 1n);
    expect(c.next).toMatchObject({ workers: 4096, idsPerMsPerWorker: 1024 });
    expect(c.warnings).toEqual(['fewer IDs per ms per worker (4096 → 1024)']);
  });

  it('accepts an earlier epoch with the same widths', () => {
    const c = checkChange(twitter, custom({ epochMs: TWITTER_EPOCH_MS - 86_400_000, fields: fields(10, 12) }), CUTOVER);
    expect(c.problems).toEqual([]);
  });

  it('refuses one more time bit taken from the low bits: values fall below the old ones', () => {
    const c = checkChange(twitter, custom({ timeBits: 42, fields: fields(10, 11) }), CUTOVER);
    expect(c.problems).toEqual([
      expect.stringMatching(/^not value-disjoint: x's first ID at the cutover \(\d+\) is not above twitter's largest ID before it/),
    ]);
  });

  it('refuses a later epoch', () => {
    const c = checkChange(twitter, custom({ epochMs: Date.parse('2020-01-01T00:00:00Z'), fields: fields(10, 12) }), CUTOVER);
    expect(c.safe).toBe(false);
    expect(c.problems.join('\n')).toMatch(/the epoch may only move earlier/);
    expect(c.problems.join('\n')).toMatch(/not value-disjoint/);
  });

  it('refuses fewer time bits (even though the values are disjoint)', () => {
    const c = checkChange(twitter, custom({ timeBits: 40, fields: fields(12, 11) }), CUTOVER);
    expect(c.problems).toHaveLength(1);
    expect(c.problems[0]).toMatch(/^fewer time bits \(41 → 40\): x's time field spans less than twitter's: it runs out on 2045-/);
  });

  it('refuses an equal width sum with the node field shrunk', () => {
    const c = checkChange(twitter, custom({ fields: fields(8, 14) }), CUTOVER);
    expect(c.problems).toEqual([
      'the node fields shrink (10 → 8 bits: 1024 → 256 worker ids): a running worker may hold an id the new version has no room for',
    ]);
  });

  it('lists what breaks past 2^63 for a version whose widths sum to 64', () => {
    const c = checkChange(twitter, custom({ timeBits: 42, fields: fields(10, 12) }), CUTOVER);
    expect(c.safe).toBe(true);
    expect(c.breaks.join('\n')).toMatch(/BIGINT[\s\S]*long[\s\S]*2\^53[\s\S]*Protobuf int64/);
  });
});

describe('a lineage in the layouts config', () => {
  const orders = defineLayouts(CONFIG).get('orders') as Layout;
  const lineage = orders.lineage!;

  it('lists its versions, each from its cutover', () => {
    expect(lineage.versions.map((v) => [v.version, v.layout.name, v.fromMs])).toEqual([
      [1, 'twitter', undefined],
      [2, 'orders-2027', CUTOVER],
    ]);
    expect(versionAt(lineage, CUTOVER - 1).version).toBe(1);
    expect(versionAt(lineage, CUTOVER).version).toBe(2);
  });

  it('decoders pick the version from the value and say which', () => {
    const v1 = lineage.versions[0]!;
    const v2 = lineage.versions[1]!;
    const lastOld = compose(v1.layout, v1.lastTick, { datacenter: 31, worker: 31, sequence: 4095 });
    const firstNew = compose(v2.layout, v2.firstTick, { worker: 0, sequence: 0 });
    expect(firstNew).toBeGreaterThan(lastOld);
    expect(versionOf(lineage, lastOld).version).toBe(1);
    expect(versionOf(lineage, firstNew).version).toBe(2);
    expect(decompose(orders, firstNew)).toMatchObject({ version: 2, layout: 'orders-2027', timestampMs: CUTOVER });
    const e = explainId(compose(v2.layout, v2.firstTick + 5, { worker: 4095, sequence: 7 }).toString(), orders);
    expect(e).toMatchObject({ lineage: 'orders', version: 2, layout: 'orders-2027', worker: 4095, sequence: 7 });
    expect(explainId(lastOld.toString(), orders)).toMatchObject({ lineage: 'orders', version: 1, layout: 'twitter', worker: 31 });
  });

  it('an unsafe lineage is a config error naming the version and the reason', () => {
    const bad = { ...CONFIG, 'orders-2027': { epochMs: TWITTER_EPOCH_MS, timeBits: 41, fields: fields(8, 14) } };
    expect(() => defineLayouts(bad)).toThrow(
      /layout "orders": lineage\[1\] \(orders-2027\) from 2027-01-01T00:00:00.000Z: the node fields shrink/,
    );
    expect(() => defineLayouts({ orders: { lineage: [{ layout: 'twitter' }, { layout: 'leaf' }] } })).toThrow(/"from" is required/);
    expect(() => defineLayouts({ orders: { lineage: [{ layout: 'nope' }] } })).toThrow(/lineage\[0\]\.layout must be a preset/);
    expect(() => defineLayouts({ orders: { lineage: [{ layout: 'twitter' }, { layout: 'leaf', from: '2027-01-01' }] } })).toThrow(
      InvalidArgumentError,
    );
  });
});

describe('the generator at a cutover', () => {
  it('answers "cutover" past the version\'s last tick, and issues up to it', () => {
    const orders = defineLayouts(CONFIG).get('orders') as Layout;
    const v1 = orders.lineage!.versions[0]!;
    const clock = new ManualClock(CUTOVER - 2);
    const g = new SnowflakeGenerator({ layout: v1.layout, clock, lastTick: v1.lastTick });
    expect(typeof g.take()).toBe('string');
    clock.advance(1);
    expect(typeof g.take()).toBe('string');
    clock.advance(1);
    expect(g.take()).toEqual({ reason: 'cutover', waitMs: 0 });
  });
});
