/**
 * Where layouts run out, as vectors (test/fixtures/layout-boundaries, MongoDB's
 * spec-test style: the data in a file, this runner beside the code). For each
 * layout: its end is the published one, a generator on the last tick issues
 * the vector's ID, one tick later it refuses with ID_SPACE_EXHAUSTED (never a
 * wrapped or negative ID, whatever the clock policy), and every decoder gives
 * the last tick's time for the largest ID, the peer libraries included.
 */
import { readFileSync } from 'node:fs';
import { Snowflake as SapphireSnowflake } from '@sapphire/snowflake';
import NodejsSnowflake from 'nodejs-snowflake';
import { Sonyflake } from 'sonyflake';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../test/helpers/fakes.js';
import { CLOCK_POLICIES, SnowflakeGenerator, type Wait } from './generator.js';
import { explainId } from './explain.js';
import { compose, decompose, getLayout, lifetimeYears } from './layout.js';

interface IdVector {
  readonly id: string;
  readonly fields: Record<string, number>;
}
interface Vector {
  readonly layout: string;
  readonly epoch: string;
  readonly epochMs: number;
  readonly unitMs: number;
  readonly timeBits: number;
  readonly lastTick: number;
  readonly lastTickAt: string;
  readonly endsAt: string;
  readonly endsAtShanghai?: string;
  readonly lifetimeYears: number;
  readonly firstIdOfLastTick: IdVector;
  readonly largestId: IdVector;
}

const { layouts: vectors } = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/layout-boundaries/vectors.json', import.meta.url), 'utf8'),
) as { layouts: Vector[] };
const ms = (iso: string) => Date.parse(iso);
const MAX_SIGNED = (1n << 63n) - 1n;

it('the fixture covers uid-generator, twitter and sonyflake', () => {
  expect(vectors.map((v) => v.layout)).toEqual(expect.arrayContaining(['uid-generator', 'twitter', 'sonyflake']));
});

describe.each(vectors)('$layout', (v) => {
  const l = getLayout(v.layout);

  it('ends where the vector says: epoch + 2^timeBits units (2^(63 - field bits) for a 64-bit layout)', () => {
    expect([l.epochMs, l.unitMs, l.timeBits]).toEqual([v.epochMs, v.unitMs, v.timeBits]);
    expect(new Date(l.epochMs).toISOString()).toBe(v.epoch);
    expect(l.maxTick).toBe(v.lastTick);
    expect(new Date(l.endsAtMs).toISOString()).toBe(v.endsAt);
    expect(ms(v.endsAt) - ms(v.lastTickAt)).toBe(v.unitMs);
    expect(l.epochMs + v.lastTick * v.unitMs).toBe(ms(v.lastTickAt));
    expect(lifetimeYears(l)).toBeCloseTo(v.lifetimeYears, 3);
    if (v.endsAtShanghai !== undefined) {
      const shanghai = new Date(l.endsAtMs).toLocaleString('sv-SE', { timeZone: 'Asia/Shanghai' });
      expect(shanghai).toBe(v.endsAtShanghai);
    }
  });

  it('composes and decodes the vector IDs', () => {
    for (const x of [v.firstIdOfLastTick, v.largestId]) {
      expect(compose(l, v.lastTick, x.fields).toString()).toBe(x.id);
      const d = decompose(l, BigInt(x.id));
      expect(d.tick).toBe(v.lastTick);
      expect(d.values).toEqual(x.fields);
      const e = explainId(x.id, l);
      expect(e.time).toBe(v.lastTickAt);
      expect(e.timestampMs).toBe(ms(v.lastTickAt));
    }
    expect(BigInt(v.largestId.id)).toBe(MAX_SIGNED);
  });

  it('on the last tick a generator issues the vector ID; one tick later it refuses with ID_SPACE_EXHAUSTED', () => {
    // The last millisecond of the last tick too: a tick of 10 ms or 1 s is still the last one then.
    for (const at of [ms(v.lastTickAt), ms(v.endsAt) - 1]) {
      const g = new SnowflakeGenerator({ layout: l, clock: new ManualClock(at) });
      expect(g.take()).toBe(v.firstIdOfLastTick.id);
    }
    for (const at of [ms(v.endsAt), ms(v.endsAt) + 1, ms(v.endsAt) + 365 * 86_400_000]) {
      const g = new SnowflakeGenerator({ layout: l, clock: new ManualClock(at) });
      expect(() => g.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
    }
  });

  it('with a ceiling of ticks reserved up to the end (as a leased worker has), one tick later is ID_SPACE_EXHAUSTED, not a call for a higher ceiling', () => {
    // A leased worker's ceiling never passes maxTick (snowflake-lease.ts): asking to raise it past the end
    // could only fail, and a server answered LEASE_LOST ("could not reserve ticks ahead") instead.
    const clock = new ManualClock(ms(v.lastTickAt));
    const g = new SnowflakeGenerator({ layout: l, clock, ceilingTick: l.maxTick });
    expect(g.take()).toBe(v.firstIdOfLastTick.id);
    clock.advance(v.unitMs);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
    const fresh = new SnowflakeGenerator({ layout: l, clock: new ManualClock(ms(v.endsAt)), ceilingTick: l.maxTick - 5 });
    expect(() => fresh.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
  });

  it.each(CLOCK_POLICIES)('under clock policy %s, a generator that runs past the end refuses, never wraps or goes negative', (policy) => {
    if (policy === 'backup-worker' && l.shardBits > 0) return; // a per-request shard has no backup worker ids
    const clock = new ManualClock(ms(v.lastTickAt));
    const g = new SnowflakeGenerator({
      layout: l,
      clock,
      clockPolicy: policy,
      ...(policy === 'backup-worker' ? { backups: [{ workerId: 1 }] } : {}),
    });
    // The whole sequence of the last tick: every ID valid, below 2^63, on the last tick.
    const seen = new Set<string>();
    for (let i = 0; i < 2 ** l.sequenceBits; i++) {
      const r = g.take();
      expect(typeof r, `ID ${i} of the last tick`).toBe('string');
      const id = BigInt(r as string);
      expect(id >= 0n && id <= MAX_SIGNED, String(id)).toBe(true);
      expect(decompose(l, id).tick).toBe(v.lastTick);
      seen.add(r as string);
    }
    expect(seen.size).toBe(2 ** l.sequenceBits);
    // Used up: wait for the next tick, which does not exist.
    const wait = g.take() as Wait;
    expect(wait.reason).toBe('sequence');
    if (policy === 'logical') {
      // The clock steps back a tick: logical borrows the next tick, past the end.
      clock.step(-v.unitMs);
      expect(() => g.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
      clock.step(v.unitMs);
    }
    clock.advance(wait.waitMs);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
    clock.advance(86_400_000);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
  });
});

describe('the peer libraries decode the last IDs alike', () => {
  const twitter = vectors.find((v) => v.layout === 'twitter')!;
  const sonyflake = vectors.find((v) => v.layout === 'sonyflake')!;

  it('@sapphire/snowflake (twitter positions: 5 + 5 + 12 below the time)', () => {
    const d = new SapphireSnowflake(BigInt(twitter.epochMs)).deconstruct(twitter.largestId.id);
    expect(Number(d.timestamp)).toBe(ms(twitter.lastTickAt));
    expect([Number(d.workerId), Number(d.processId), Number(d.increment)]).toEqual([31, 31, 4095]);
    expect(Number(new SapphireSnowflake(BigInt(twitter.epochMs)).deconstruct(twitter.firstIdOfLastTick.id).timestamp)).toBe(
      ms(twitter.lastTickAt),
    );
  });

  it('nodejs-snowflake (22 bits below the time)', () => {
    for (const x of [twitter.firstIdOfLastTick, twitter.largestId]) {
      expect(NodejsSnowflake.Snowflake.timestampFromID(BigInt(x.id), twitter.epochMs)).toBe(ms(twitter.lastTickAt));
    }
  });

  it('sonyflake (npm; its own ticks are ms, so it decodes the tick itself with epoch 0) — and, unchecked, it makes 2^63 one tick later', () => {
    const d = Sonyflake.decompose(sonyflake.largestId.id, { epoch: 0 });
    expect(d).toEqual({ timestamp: sonyflake.lastTick, machineId: 65535, sequence: 255 });
    expect(sonyflake.epochMs + d.timestamp * sonyflake.unitMs).toBe(ms(sonyflake.lastTickAt));
    // What Sequoia refuses, the peer composes: one tick past the end is 2^63, beyond a signed 64-bit column.
    expect(new Sonyflake({ epoch: 0 }).generateCustomId({ timestamp: sonyflake.lastTick + 1, sequence: 0 })).toBe(String(1n << 63n));
  });
});
