import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import KSUID from 'ksuid';
import { BASE62_ALPHABET, decodeBase62, encodeBase62 } from './base62.js';
import { InvalidArgumentError } from '../errors.js';

describe('base62', () => {
  it('known values', () => {
    expect(encodeBase62(0)).toBe('0');
    expect(encodeBase62(61n)).toBe('z');
    expect(encodeBase62(62)).toBe('10');
    expect(encodeBase62(62, 4)).toBe('0010');
    expect(encodeBase62(3843n)).toBe('zz');
    expect(encodeBase62((1n << 64n) - 1n)).toBe('LygHa16AHYF');
    expect(decodeBase62('LygHa16AHYF')).toBe((1n << 64n) - 1n);
  });

  it('property: bigint round-trips, with and without fixed width', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 200n) - 1n }), fc.integer({ min: 0, max: 10 }), (v, extra) => {
        const s = encodeBase62(v);
        expect(s).toMatch(/^[0-9A-Za-z]+$/);
        expect(decodeBase62(s)).toBe(v);
        const padded = encodeBase62(v, s.length + extra);
        expect(padded.length).toBe(s.length + extra);
        expect(decodeBase62(padded)).toBe(v);
        expect(decodeBase62(padded, s.length + extra)).toBe(v);
      }),
      { numRuns: 2000 },
    );
  });

  it('property: numbers encode like the same bigints, and fixed width keeps the order', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.maxSafeNat(), (a, b) => {
        expect(encodeBase62(a)).toBe(encodeBase62(BigInt(a)));
        const ea = encodeBase62(a, 9);
        const eb = encodeBase62(b, 9);
        expect(ea < eb ? -1 : ea > eb ? 1 : 0).toBe(Math.sign(a - b));
      }),
    );
  });

  it('matches KSUID string encoding (same alphabet, 27 chars)', () => {
    for (let i = 0; i < 200; i++) {
      const k = KSUID.randomSync();
      const v = BigInt('0x' + k.raw.toString('hex'));
      expect(encodeBase62(v, 27)).toBe(k.string);
      expect(decodeBase62(k.string)).toBe(v);
    }
  });

  it('rejects bad input with INVALID_ARGUMENT', () => {
    for (const bad of ['', ' 1', '1-2', 'a+', '\u00e9', '0_1', 'x'.repeat(2000)]) {
      expect(() => decodeBase62(bad)).toThrow(InvalidArgumentError);
    }
    expect(() => decodeBase62('10', 3)).toThrow(InvalidArgumentError);
    expect(() => encodeBase62(-1)).toThrow(InvalidArgumentError);
    expect(() => encodeBase62(-1n)).toThrow(InvalidArgumentError);
    expect(() => encodeBase62(1.5)).toThrow(InvalidArgumentError);
    expect(() => encodeBase62(62, 1)).toThrow(InvalidArgumentError);
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }), (s) => {
        const valid = [...s].every((c) => BASE62_ALPHABET.includes(c));
        if (valid) expect(encodeBase62(decodeBase62(s), s.length)).toBe(s);
        else expect(() => decodeBase62(s)).toThrow(InvalidArgumentError);
      }),
    );
  });
});
