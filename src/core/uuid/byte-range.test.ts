/**
 * Every bytes API checks its offset and length (uuid's own tests expect
 * `v4({}, buf, -1)` and `stringify(arr, -1)`-style misuse to throw, never to
 * return text such as "undefined0f5a…" or an all-zero UUID).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../test/helpers/fakes.js';
import { PooledSystemRandom } from '../../ports/random.js';
import { ObjectIdGenerator } from '../objectid/index.js';
import { bytesToUlid, formatUuid, UuidV4Generator, UuidV7Generator } from './index.js';

const random = new PooledSystemRandom();
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const BAD = [-1, 0.5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '0' as unknown as number];
const coded = { code: 'INVALID_ARGUMENT' };

describe('bytes APIs validate offset and length', () => {
  const src = new Uint8Array(32).fill(0x0f);

  for (const [name, fn] of [
    ['formatUuid', (o: number) => formatUuid(src, o)],
    ['bytesToUlid', (o: number) => bytesToUlid(src, o)],
  ] as const) {
    it(`${name} refuses bad offsets with INVALID_ARGUMENT`, () => {
      for (const o of [...BAD, 17, 32]) expect(() => fn(o), `offset ${String(o)}`).toThrow(expect.objectContaining(coded));
      expect(fn(16)).toMatch(/^[0-9a-z-]+$/i);
      expect(fn(0)).toBe(fn(16));
    });
  }

  it('formatUuid and bytesToUlid refuse what is not a Uint8Array', () => {
    expect(() => formatUuid([1, 2, 3] as unknown as Uint8Array)).toThrow(expect.objectContaining(coded));
    expect(() => bytesToUlid('x'.repeat(16) as unknown as Uint8Array)).toThrow(expect.objectContaining(coded));
  });

  const gens = [
    ['UuidV4Generator', 16, () => new UuidV4Generator({ random })],
    ['UuidV7Generator', 16, () => new UuidV7Generator({ clock, random })],
    ['ObjectIdGenerator', 12, () => new ObjectIdGenerator({ clock, random })],
  ] as const;
  for (const [name, size, make] of gens) {
    it(`${name}.nextBytes refuses bad offsets and leaves the buffer untouched`, () => {
      const g = make();
      const out = new Uint8Array(size + 4);
      for (const o of [...BAD, 5, size + 4]) {
        expect(() => g.nextBytes(out, o), `offset ${String(o)}`).toThrow(expect.objectContaining(coded));
      }
      expect(out.every((b) => b === 0)).toBe(true);
      g.nextBytes(out, 4);
      expect(out.subarray(0, 4).every((b) => b === 0)).toBe(true);
      expect(out.subarray(4).some((b) => b !== 0)).toBe(true);
    });
  }
});
