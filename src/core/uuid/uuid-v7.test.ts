import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import * as uuid from 'uuid';
import { UuidV7Generator, UUID_V7_MAX_MS } from './uuid-v7.js';
import { parseUuid, describeUuid } from './uuid-text.js';
import type { Random } from '../random.js';
import { systemRandom } from '../random.js';
import { ClockError, SequoiaError } from '../errors.js';

/** A Random that hands out `script` first, then bytes from `rest` (default: the CSPRNG). */
function scriptedRandom(script: number[], rest: (b: Uint8Array) => void = (b) => b.set(randomBytes(b.length))): Random {
  const queue = [...script];
  return {
    fill(bytes) {
      rest(bytes);
      for (let i = 0; i < bytes.length && queue.length > 0; i++) bytes[i] = queue.shift()!;
    },
  };
}

const constant = (v: number): Random => ({ fill: (b) => b.fill(v) });

function manualClock(start: number) {
  let t = start;
  return { now: () => t, set: (v: number) => (t = v) };
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

describe('UUIDv7 RFC 9562 Appendix A.6 vector', () => {
  const ms = 0x017f22e279b0;
  // rand_a = 0xCC3 (12 bits: the counter seed), rand_b = 0x18C4DC0C0C07398F (62 bits)
  const script = [0x0c, 0xc3, 0x18, 0xc4, 0xdc, 0x0c, 0x0c, 0x07, 0x39, 0x8f];

  it('reproduces 017F22E2-79B0-7CC3-98C4-DC0C0C07398F as text', () => {
    const g = new UuidV7Generator({ clock: { now: () => ms }, random: scriptedRandom(script), counterSeedBits: 12 });
    expect(g.next()).toBe('017F22E2-79B0-7CC3-98C4-DC0C0C07398F'.toLowerCase());
  });

  it('reproduces it as bytes', () => {
    const g = new UuidV7Generator({ clock: { now: () => ms }, random: scriptedRandom(script), counterSeedBits: 12 });
    const expected = Uint8Array.from(Buffer.from('017F22E279B07CC398C4DC0C0C07398F', 'hex'));
    expect(g.nextBytes()).toEqual(expected);
    expect(describeUuid('017F22E2-79B0-7CC3-98C4-DC0C0C07398F')).toMatchObject({
      version: 7,
      variant: 'rfc9562',
      timestampMs: ms,
      randA: 0xcc3,
    });
  });

  it('writes into a caller buffer at an offset', () => {
    const g = new UuidV7Generator({ clock: { now: () => ms }, random: scriptedRandom(script), counterSeedBits: 12 });
    const out = new Uint8Array(20);
    g.nextBytes(out, 3);
    expect(Buffer.from(out.subarray(3, 19)).toString('hex')).toBe('017f22e279b07cc398c4dc0c0c07398f');
    expect(() => g.nextBytes(new Uint8Array(10))).toThrow(SequoiaError);
  });
});

describe('UUIDv7 layout', () => {
  it('has the clock ms, version 7, variant 10 and an 11-bit counter seed on each new ms', () => {
    const clock = manualClock(1_700_000_000_000);
    const g = new UuidV7Generator({ clock, random: systemRandom });
    for (let i = 0; i < 2000; i++) {
      clock.set(1_700_000_000_000 + i);
      const text = g.next();
      const { bytes, version, variant } = parseUuid(text);
      expect(version).toBe(7);
      expect(variant).toBe('rfc9562');
      expect(bytes[8]! >> 6).toBe(0b10);
      expect(describeUuid(text).timestampMs).toBe(1_700_000_000_000 + i);
      // new ms: counter re-seeded with its top bit clear
      expect(bytes[6]! & 0x08).toBe(0);
      expect(uuid.validate(text)).toBe(true);
      expect(uuid.version(text)).toBe(7);
    }
  });

  it('re-seeds randomly: counters of different ms differ', () => {
    const clock = manualClock(1_700_000_000_000);
    const g = new UuidV7Generator({ clock, random: systemRandom });
    const seeds = new Set<number>();
    for (let i = 0; i < 200; i++) {
      clock.set(1_700_000_000_000 + i);
      seeds.add(describeUuid(g.next()).randA!);
    }
    expect(seeds.size).toBeGreaterThan(150);
  });

  it('counterSeedBits 0 starts every ms at counter 0', () => {
    const clock = manualClock(5000);
    const g = new UuidV7Generator({ clock, random: constant(0xff), counterSeedBits: 0 });
    expect(describeUuid(g.next()).randA).toBe(0);
    expect(describeUuid(g.next()).randA).toBe(1);
    clock.set(5001);
    expect(describeUuid(g.next()).randA).toBe(0);
  });

  it('rejects bad options', () => {
    expect(() => new UuidV7Generator({ clock: { now: () => 0 }, random: systemRandom, counterSeedBits: 13 })).toThrow(SequoiaError);
    expect(() => new UuidV7Generator({ clock: { now: () => 0 }, random: systemRandom, poolSize: 8 })).toThrow(SequoiaError);
  });
});

describe('UUIDv7 monotonicity', () => {
  it('1,000,000 from one generator rise strictly as bytes and as text', () => {
    const g = new UuidV7Generator({ clock: { now: () => Date.now() }, random: systemRandom });
    const n = 1_000_000;
    const buf = new Uint8Array(16 * n);
    for (let i = 0; i < n; i++) g.nextBytes(buf, 16 * i);
    let bad = 0;
    for (let i = 1; i < n; i++) {
      if (compareBytes(buf.subarray(16 * (i - 1), 16 * i), buf.subarray(16 * i, 16 * (i + 1))) >= 0) bad++;
    }
    expect(bad).toBe(0);

    let prev = g.next();
    bad = 0;
    for (let i = 1; i < n; i++) {
      const t = g.next();
      if (!(t > prev)) bad++;
      prev = t;
    }
    expect(bad).toBe(0);
  });

  it('the text order is the byte order', () => {
    const g = new UuidV7Generator({ clock: { now: () => Date.now() }, random: systemRandom });
    const texts = Array.from({ length: 10_000 }, () => g.next());
    for (let i = 1; i < texts.length; i++) {
      expect(compareBytes(parseUuid(texts[i - 1]!).bytes, parseUuid(texts[i]!).bytes)).toBeLessThan(0);
    }
  });

  it('1,000,000 rise strictly under a clock that jumps back several times', () => {
    // Clock: advances 1 ms every 300 calls, jumps back 50 ms at 200k, 10 s at 500k, 1 ms at 800k.
    let calls = 0;
    let offset = 0;
    const base = 1_750_000_000_000;
    const clock = {
      now: () => {
        calls++;
        if (calls === 200_000) offset -= 50;
        if (calls === 500_000) offset -= 10_000;
        if (calls === 800_000) offset -= 1;
        return base + Math.floor(calls / 300) + offset;
      },
    };
    const g = new UuidV7Generator({ clock, random: systemRandom });
    let prev = g.next();
    let prevBytes = parseUuid(prev).bytes;
    let bad = 0;
    for (let i = 1; i < 1_000_000; i++) {
      const t = g.next();
      if (!(t > prev)) bad++;
      if (i % 997 === 0) {
        const b = parseUuid(t).bytes;
        if (compareBytes(prevBytes, b) >= 0) bad++;
        prevBytes = b;
      }
      prev = t;
    }
    expect(bad).toBe(0);
  });

  it('keeps the last ms while the clock is behind, then follows it again', () => {
    const clock = manualClock(10_000);
    const g = new UuidV7Generator({ clock, random: systemRandom });
    g.next();
    clock.set(9_000);
    expect(describeUuid(g.next()).timestampMs).toBe(10_000);
    clock.set(10_001);
    expect(describeUuid(g.next()).timestampMs).toBe(10_001);
  });

  it('borrows the next ms when the counter overflows inside one ms', () => {
    // Seeds are 0x7ff (all random bytes 0xff): 2,049 IDs fit in the frozen ms, the next borrows ms+1.
    const clock = manualClock(1_000_000);
    const g = new UuidV7Generator({ clock, random: constant(0xff) });
    const ids = Array.from({ length: 5000 }, () => g.next());
    const ms = ids.map((t) => describeUuid(t).timestampMs);
    expect(ms[0]).toBe(1_000_000);
    expect(ms[2048]).toBe(1_000_000);
    expect(describeUuid(ids[2048]!).randA).toBe(0xfff);
    expect(ms[2049]).toBe(1_000_001);
    expect(describeUuid(ids[2049]!).randA).toBe(0x7ff);
    expect(ms[4999]).toBe(1_000_002);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    // once the real clock passes the borrowed ms, it follows the clock again
    clock.set(1_000_010);
    expect(describeUuid(g.next()).timestampMs).toBe(1_000_010);
  });

  it('property: any clock trace gives strictly rising IDs, never behind the clock', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -5000, max: 50 }), fc.integer({ min: 1, max: 3000 })), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 12 }),
        (trace, seedBits) => {
          const clock = manualClock(1_600_000_000_000);
          const g = new UuidV7Generator({ clock, random: systemRandom, counterSeedBits: seedBits });
          let prev = '';
          let maxSeen = 0;
          let issued = 0;
          for (const [delta, count] of trace) {
            clock.set(clock.now() + delta);
            maxSeen = Math.max(maxSeen, clock.now());
            for (let i = 0; i < count; i++) {
              const t = g.next();
              if (!(t > prev)) return false;
              const ms = describeUuid(t).timestampMs!;
              if (ms < clock.now()) return false;
              // never further ahead than the IDs issued could have borrowed: with
              // the top counter bit clear, each borrowed ms took over 2,048 IDs
              issued++;
              if (ms > maxSeen + (seedBits <= 11 ? Math.floor(issued / 2048) : issued)) return false;
              prev = t;
            }
          }
          return true;
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('UUIDv7 clock limits', () => {
  it('refuses a clock that is not a time since 1970', () => {
    const g = new UuidV7Generator({ clock: { now: () => Number.NaN }, random: systemRandom });
    expect(() => g.next()).toThrow(ClockError);
    const g2 = new UuidV7Generator({ clock: { now: () => -5 }, random: systemRandom });
    expect(() => g2.next()).toThrow(ClockError);
  });

  it('refuses past 2^48-1 ms with ID_SPACE_EXHAUSTED', () => {
    const clock = manualClock(UUID_V7_MAX_MS);
    const g = new UuidV7Generator({ clock, random: constant(0xff), counterSeedBits: 12 });
    expect(g.next().startsWith('ffffffff-ffff-7fff')).toBe(true);
    expect(() => g.next()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
  });
});

describe('UUIDv7 cross-checks with the uuid package', () => {
  it('uuid parses Sequoia v7 to the same bytes, and Sequoia parses uuid v7 with its timestamp', () => {
    const g = new UuidV7Generator({ clock: { now: () => Date.now() }, random: systemRandom });
    for (let i = 0; i < 1000; i++) {
      const t = g.next();
      expect(uuid.validate(t)).toBe(true);
      expect(uuid.version(t)).toBe(7);
      expect(uuid.parse(t)).toEqual(parseUuid(t).bytes);
      const msecs = 1_600_000_000_000 + i * 7919;
      const theirs = uuid.v7({ msecs });
      const d = describeUuid(theirs);
      expect(d.version).toBe(7);
      expect(d.timestampMs).toBe(msecs);
      expect(parseUuid(theirs).bytes).toEqual(uuid.parse(theirs));
    }
  });
});
