import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  type Layout,
  PRESETS,
  PRESET_SPECS,
  TWITTER_EPOCH_MS,
  compose,
  decompose,
  defineLayout,
  getLayout,
  joinWorker,
  lifetimeYears,
  remainingSeconds,
  splitWorker,
} from './layout.js';
import { plan } from './planner.js';

describe('presets', () => {
  it('have the published widths and epochs', () => {
    const w = (n: string) => {
      const l = getLayout(n);
      return [l.timeBits, ...l.fields.map((f) => `${f.name}:${f.bits}`), l.epochMs, l.unitMs];
    };
    expect(w('twitter')).toEqual([41, 'datacenter:5', 'worker:5', 'sequence:12', TWITTER_EPOCH_MS, 1]);
    expect(w('leaf')).toEqual([41, 'worker:10', 'sequence:12', TWITTER_EPOCH_MS, 1]);
    expect(w('sonyflake')).toEqual([39, 'sequence:8', 'machine:16', Date.UTC(2014, 8, 1), 10]);
    expect(w('uid-generator')).toEqual([28, 'worker:22', 'sequence:13', 1463673600000, 1000]);
    expect(w('instagram')).toEqual([41, 'shard:13', 'sequence:10', 1314220021721, 1]);
    expect(w('customuuid')).toEqual([41, 'region:3', 'worker:10', 'sequence:10', TWITTER_EPOCH_MS, 1]);
    expect(w('simpleflake')).toEqual([41, 'sequence:23', 946702800000, 1]);
    expect(getLayout('customuuid').sequenceStart).toEqual({ kind: 'random', max: 9 });
  });

  it("uid-generator: Baidu's epoch, 2016-05-20 00:00 in Shanghai (DefaultUidGenerator: epochSeconds 1463673600)", () => {
    const l = getLayout('uid-generator');
    expect(l.epochMs).toBe(1463673600000);
    expect(new Date(l.epochMs).toISOString()).toBe('2016-05-19T16:00:00.000Z');
    // parseUID: time = (epochSeconds + deltaSeconds) s; the uid with deltaSeconds 1, worker 1, sequence 0.
    const uid = (1n << 35n) | (1n << 13n);
    const d = decompose(l, uid);
    expect(d.timestampMs).toBe(1463673601000);
    expect(d.values).toEqual({ worker: 1, sequence: 0 });
    // 2^28 seconds after the epoch, the 28 time bits are used up.
    expect(l.endsAtMs).toBe(1463673600000 + 2 ** 28 * 1000);
    expect(new Date(l.endsAtMs).toISOString()).toBe('2024-11-20T13:24:16.000Z');
  });

  it("leaf starts each ms's sequence at a random 0-99, as Leaf does; twitter at 0", () => {
    expect(getLayout('leaf').sequenceStart).toEqual({ kind: 'random', max: 99 });
    expect(getLayout('twitter').sequenceStart).toEqual({ kind: 'zero' });
  });

  it('know when their time bits run out', () => {
    // uid-generator's default ran out on 2024-11-20 (its users' IDs went negative).
    expect(new Date(getLayout('uid-generator').endsAtMs).toISOString().slice(0, 10)).toBe('2024-11-20');
    expect(remainingSeconds(getLayout('uid-generator'), Date.UTC(2026, 0, 1))).toBeLessThan(0);
    expect(lifetimeYears(getLayout('twitter'))).toBeCloseTo(69.7, 1);
    // 64-bit layouts stop before the sign bit: 2^40 ms.
    const ig = getLayout('instagram');
    expect(ig.maxTick).toBe(2 ** 40 - 1);
    expect(ig.warnings.join()).toMatch(/sign bit/);
    expect(getLayout('twitter').warnings.join()).toMatch(/2\^53/);
  });

  it('twitter and leaf are one id space; sonyflake is another', () => {
    expect(getLayout('twitter').spaceKey).toBe(getLayout('leaf').spaceKey);
    expect(getLayout('sonyflake').spaceKey).not.toBe(getLayout('leaf').spaceKey);
    expect(getLayout('twitter').workerBits).toBe(10);
    expect(getLayout('leaf').workerBits).toBe(10);
  });

  it('unknown names are INVALID_ARGUMENT naming the presets', () => {
    expect(() => getLayout('nope')).toThrow(/twitter, leaf, sonyflake/);
  });
});

describe('PRESETS, validated at its first use', () => {
  // A fresh module instance each time: the first call on it is the one that fills it.
  const fresh = async () => {
    vi.resetModules();
    return (await import('./layout.js')).PRESETS;
  };
  const NAMES = ['twitter', 'leaf', 'sonyflake', 'uid-generator', 'instagram', 'customuuid', 'simpleflake'];

  it.each([
    ['size', (m: ReadonlyMap<string, Layout>) => m.size],
    ['get', (m: ReadonlyMap<string, Layout>) => m.get('leaf')?.name],
    ['has', (m: ReadonlyMap<string, Layout>) => m.has('sonyflake')],
    ['keys', (m: ReadonlyMap<string, Layout>) => [...m.keys()]],
    ['values', (m: ReadonlyMap<string, Layout>) => [...m.values()].map((l) => l.name)],
    ['entries', (m: ReadonlyMap<string, Layout>) => [...m.entries()].map(([k]) => k)],
    ['iteration', (m: ReadonlyMap<string, Layout>) => [...m].map(([k]) => k)],
    [
      'forEach',
      (m: ReadonlyMap<string, Layout>) => {
        const seen: string[] = [];
        m.forEach((_, k) => seen.push(k));
        return seen;
      },
    ],
    ['new Map', (m: ReadonlyMap<string, Layout>) => [...new Map(m).keys()]],
    ['inspect', (m: ReadonlyMap<string, Layout>) => inspect(m).startsWith('Map(7) {')],
  ])('answers as the filled Map when %s is the first use', async (_, use) => {
    const presets = await fresh();
    const want = use(new Map(NAMES.map((n) => [n, defineLayout(PRESET_SPECS.find((s) => s.name === n)!)])));
    expect(use(presets)).toEqual(want);
    expect(presets).toBeInstanceOf(Map);
    expect([...presets.keys()]).toEqual(NAMES);
  });
});

describe('custom layouts', () => {
  const base = {
    name: 'orders',
    version: 1,
    epochMs: Date.UTC(2024, 0, 1),
    unitMs: 1,
    timeBits: 41,
    fields: [
      { name: 'worker', bits: 10, role: 'node' as const },
      { name: 'sequence', bits: 12, role: 'sequence' as const },
    ],
  };
  it('accepts a valid one', () => {
    expect(defineLayout(base, { minLifetimeYears: 10 }).lowBits).toBe(22);
  });
  it.each([
    [{ timeBits: 40 }, /sum to 63/],
    [{ epochMs: Date.now() + 86_400_000 }, /in the past/],
    [{ fields: [{ name: 'worker', bits: 22, role: 'node' as const }] }, /exactly one field/],
    [{ name: 'Bad Name' }, /name must match/],
    [{ unitMs: 0 }, /unitMs/],
  ])('refuses %o', (patch, msg) => {
    expect(() => defineLayout({ ...base, ...patch })).toThrow(msg);
  });
  it('refuses a lifetime shorter than asked', () => {
    expect(() =>
      defineLayout(
        {
          ...base,
          timeBits: 31,
          fields: [
            { name: 'worker', bits: 20, role: 'node' },
            { name: 'sequence', bits: 12, role: 'sequence' },
          ],
        },
        { minLifetimeYears: 10 },
      ),
    ).toThrow(/less than 10 years/);
  });
  it('warns when IDs exceed 2^53', () => {
    expect(defineLayout(base).warnings.join()).toMatch(/2\^53/);
  });
});

describe('compose/decompose', () => {
  for (const layout of PRESETS.values()) {
    it(`round-trips under ${layout.name}`, () => {
      const field = (bits: number) => fc.integer({ min: 0, max: 2 ** bits - 1 });
      const rec: Record<string, fc.Arbitrary<number>> = {};
      for (const f of layout.fields) rec[f.name] = field(f.bits);
      fc.assert(
        fc.property(fc.integer({ min: 0, max: layout.maxTick }), fc.record(rec), (tick, values) => {
          const id = compose(layout, tick, values);
          expect(id).toBeGreaterThanOrEqual(0n);
          expect(id).toBeLessThanOrEqual((1n << 63n) - 1n);
          const d = decompose(layout, id);
          expect(d.tick).toBe(tick);
          expect(d.values).toEqual(values);
          expect(joinWorker(layout, splitWorker(layout, joinWorker(layout, values)))).toBe(joinWorker(layout, values));
        }),
      );
    });
  }
  it('decodes a known Twitter ID', () => {
    // 1288834974657 + (id >> 22) = the tweet's time; 20 = the first tweet id after snowflake launch is not public, so compose one.
    const l = getLayout('twitter');
    const id = compose(l, 1000, { datacenter: 3, worker: 7, sequence: 5 });
    expect(id).toBe((1000n << 22n) | (3n << 17n) | (7n << 12n) | 5n);
  });
});

describe('plan', () => {
  it("sizes the seed article's example: 256 nodes, 1,500/ms, 30 years", () => {
    const p = plan({ nodes: 256, peakPerMs: 1500, years: 30 });
    expect([p.nodeBits, p.sequenceBits, p.timeBits, p.totalBits]).toEqual([8, 11, 40, 60]);
    expect(p.spareBits).toBe(4); // 60 of 64 bits used
    expect(p.warnings.join()).toMatch(/2\^53/);
  });
  it('warns about unsigned 64-bit storage and overflow', () => {
    expect(plan({ nodes: 2 ** 11, peakPerMs: 4096, years: 69 }).warnings.join()).toMatch(/unsigned 64-bit/);
    expect(plan({ nodes: 2 ** 20, peakPerMs: 4096, years: 69 }).warnings.join()).toMatch(/does not fit/);
  });
  it('stays below 2^53 for small plans', () => {
    const p = plan({ nodes: 4, peakPerMs: 16, years: 1000, unitMs: 1000 });
    expect(p.idBits).toBeLessThanOrEqual(53);
    expect(p.warnings).toEqual([]);
  });
  it('refuses bad input', () => {
    expect(() => plan({ nodes: 0, peakPerMs: 1, years: 1 })).toThrow(/nodes/);
    expect(() => plan({ nodes: 1, peakPerMs: -1, years: 1 })).toThrow(/peak/);
  });
});
