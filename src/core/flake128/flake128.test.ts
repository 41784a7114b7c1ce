import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Flake128Generator, composeFlake128, decomposeFlake128, formatFlake128, parseFlake128 } from './flake128.js';
import { ClockError, InvalidArgumentError } from '../errors.js';

function manualClock(start: number) {
  let t = start;
  return { now: () => t, set: (v: number) => (t = v) };
}

describe('Boundary flake 128', () => {
  it('lays out 64-bit ms, 48-bit worker, 16-bit sequence', () => {
    const clock = manualClock(1_700_000_000_000);
    const g = new Flake128Generator({ clock, worker: 0x0242ac120002 });
    const id = g.next();
    expect(typeof id).toBe('bigint');
    expect(formatFlake128(id as bigint)).toBe((1_700_000_000_000).toString(16).padStart(16, '0') + '0242ac120002' + '0000');
    expect(decomposeFlake128(id as bigint)).toEqual({ timestampMs: 1_700_000_000_000n, worker: 0x0242ac120002n, sequence: 0 });
    expect(g.nextHex()).toBe((1_700_000_000_000).toString(16).padStart(16, '0') + '0242ac120002' + '0001');
  });

  it('sequence exhausted: answers retryAfterMs, then resumes on the next ms at 0', () => {
    const clock = manualClock(1000);
    const g = new Flake128Generator({ clock, worker: 7 });
    let prev = -1n;
    for (let i = 0; i < 65536; i++) {
      const id = g.next() as bigint;
      expect(id > prev).toBe(true);
      prev = id;
    }
    expect(g.next()).toEqual({ retryAfterMs: 1 });
    expect(g.nextHex()).toEqual({ retryAfterMs: 1 });
    clock.set(1001);
    const id = g.next() as bigint;
    expect(id > prev).toBe(true);
    expect(decomposeFlake128(id)).toEqual({ timestampMs: 1001n, worker: 7n, sequence: 0 });
  });

  it('clock backwards: throws ClockError with the gap as retryAfterMs, issues nothing', () => {
    const clock = manualClock(5000);
    const g = new Flake128Generator({ clock, worker: 1 });
    const last = g.next() as bigint;
    clock.set(4990);
    expect(() => g.next()).toThrow(ClockError);
    try {
      g.next();
    } catch (e) {
      expect((e as ClockError).code).toBe('CLOCK_MOVED_BACKWARDS');
      expect((e as ClockError).retryAfterMs).toBe(10);
    }
    clock.set(5000);
    expect((g.next() as bigint) > last).toBe(true);
  });

  it('property: strictly rising under any forward clock trace; hex text sorts the same', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 70_000 })), { maxLength: 6 }), (trace) => {
        const clock = manualClock(1_000_000);
        const g = new Flake128Generator({ clock, worker: 42 });
        let prev = -1n;
        let prevHex = '';
        for (const [delta, count] of trace) {
          clock.set(clock.now() + delta);
          for (let i = 0; i < count; i++) {
            const r = g.next();
            if (typeof r !== 'bigint') {
              clock.set(clock.now() + r.retryAfterMs);
              continue;
            }
            const hex = formatFlake128(r);
            if (!(r > prev) || !(hex > prevHex)) return false;
            prev = r;
            prevHex = hex;
          }
        }
        return true;
      }),
      { numRuns: 20 },
    );
  });

  it('compose/decompose and text round-trip', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.bigInt({ min: 0n, max: (1n << 48n) - 1n }),
        fc.integer({ min: 0, max: 0xffff }),
        (timestampMs, worker, sequence) => {
          const id = composeFlake128({ timestampMs, worker, sequence });
          expect(decomposeFlake128(id)).toEqual({ timestampMs, worker, sequence });
          expect(parseFlake128(formatFlake128(id).toUpperCase())).toBe(id);
        },
      ),
    );
  });

  it('rejects bad input', () => {
    expect(() => new Flake128Generator({ clock: manualClock(0), worker: 2 ** 48 })).toThrow(InvalidArgumentError);
    expect(() => new Flake128Generator({ clock: manualClock(0), worker: -1n })).toThrow(InvalidArgumentError);
    expect(() => parseFlake128('0'.repeat(31))).toThrow(InvalidArgumentError);
    expect(() => composeFlake128({ timestampMs: 0n, worker: 0n, sequence: 65536 })).toThrow(InvalidArgumentError);
    expect(() => new Flake128Generator({ clock: { now: () => Number.NaN }, worker: 1 }).next()).toThrow(ClockError);
  });
});
