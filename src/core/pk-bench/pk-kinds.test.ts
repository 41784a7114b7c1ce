import { describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import { systemRandom } from '../random.js';
import { interleavedOrder, PK_KINDS, pkKeySource, pkRowColumns, quantile, SimulatedSegmentServers } from './pk-kinds.js';

describe('bench pk keys', () => {
  it('simulated segment servers never repeat an ID, each increases, and they write to as many places as there are servers', () => {
    const s = new SimulatedSegmentServers(4, 100, systemClock);
    const seen = new Set<bigint>();
    const last = [0n, 0n, 0n, 0n];
    const ids: bigint[] = [];
    for (let i = 0; i < 4000; i++) {
      const server = i % 4;
      const id = s.take(server);
      expect(seen.has(id)).toBe(false);
      seen.add(id);
      expect(id).toBeGreaterThan(last[server]!);
      last[server] = id;
      ids.push(id);
    }
    // Round robin over 4 servers: consecutive IDs come from 4 different ranges, not one counter.
    expect(ids.slice(0, 4)).toEqual([1n, 101n, 201n, 301n]);
    const descents = ids.filter((v, i) => i > 0 && v < ids[i - 1]!).length;
    expect(descents).toBeGreaterThan(900);
  });

  it('each kind makes keys of its promised shape', () => {
    const o = { clock: systemClock, random: systemRandom, servers: 2, step: 10 };
    expect(pkKeySource(PK_KINDS.sequence, o).next(0)).toBeUndefined();
    expect(pkKeySource(PK_KINDS.segment, o).next(1)).toBe('11');
    expect(pkKeySource(PK_KINDS.snowflake, o).next(0)).toMatch(/^[1-9][0-9]{15,18}$/);
    const v7 = pkKeySource(PK_KINDS.uuidv7, o).next(0) as Uint8Array;
    expect(v7.length).toBe(16);
    expect(v7[6]! >> 4).toBe(7);
    const v4 = pkKeySource(PK_KINDS.uuidv4, o).next(0) as Uint8Array;
    expect(v4[6]! >> 4).toBe(4);
    expect(pkKeySource(PK_KINDS['uuidv4-text'], o).next(0)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(pkKeySource(PK_KINDS.ulid, o).next(0)).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    // snowflakes of different servers differ (worker bits) even in the same ms
    const sf = pkKeySource(PK_KINDS.snowflake, o);
    expect(sf.next(0)).not.toBe(sf.next(1));
  });

  it('the workload is the same for every kind: row i has the same columns whoever asks', () => {
    const a = pkRowColumns(42, 30, 2);
    expect(pkRowColumns(42, 30, 2)).toEqual(a);
    expect(a.payload).toHaveLength(30);
    expect(a.ints).toHaveLength(2);
    expect(pkRowColumns(43, 30, 2)).not.toEqual(a);
  });

  it('interleaved order: every kind runs once per slice, and the first and last places rotate', () => {
    const kinds = ['a', 'b', 'c', 'd'];
    const firsts = new Set<string>();
    const afterA = new Set<string>();
    for (let s = 0; s < 8; s++) {
      const o = interleavedOrder(kinds, s);
      expect([...o].sort()).toEqual(kinds);
      if (s < 4) firsts.add(o[0]!);
      afterA.add(o[(o.indexOf('a') + 1) % 4]!);
    }
    expect(firsts.size).toBe(4);
    expect(afterA.size).toBe(2);
  });

  it('quantile: nearest rank', () => {
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(
      quantile(
        Float64Array.from({ length: 100 }, (_, i) => 100 - i),
        0.99,
      ),
    ).toBe(99);
    expect(quantile([], 0.5)).toBe(0);
  });
});
