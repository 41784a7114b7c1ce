import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { bytesToHex, decodeHex, encodeHex, hexToBytes } from './hex.js';
import { decodeDecimal, encodeDecimal } from './decimal.js';
import { MAX_ID } from '../id.js';
import { InvalidArgumentError } from '../errors.js';

describe('hex', () => {
  it('property: bytes and integers round-trip', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
        const t = bytesToHex(b);
        expect(t).toBe(Buffer.from(b).toString('hex'));
        expect(hexToBytes(t)).toEqual(b);
        expect(hexToBytes(t.toUpperCase())).toEqual(b);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), (v) => {
        expect(decodeHex(encodeHex(v))).toBe(v);
        expect(encodeHex(v, 32)).toHaveLength(32);
        expect(decodeHex(encodeHex(v, 32).toUpperCase(), 32)).toBe(v);
      }),
    );
  });

  it('rejects bad input', () => {
    for (const bad of ['', '0x10', 'g', '-1', ' a', 'a b']) expect(() => decodeHex(bad)).toThrow(InvalidArgumentError);
    expect(() => hexToBytes('abc')).toThrow(InvalidArgumentError);
    expect(() => hexToBytes('zz')).toThrow(InvalidArgumentError);
    expect(() => hexToBytes('abcd', 3)).toThrow(InvalidArgumentError);
    expect(() => encodeHex(256, 1)).toThrow(InvalidArgumentError);
    expect(() => encodeHex(-1n)).toThrow(InvalidArgumentError);
  });
});

describe('decimal', () => {
  it('property: round-trips every ID', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX_ID }), (v) => {
        expect(decodeDecimal(encodeDecimal(v))).toBe(v);
      }),
    );
    fc.assert(
      fc.property(fc.maxSafeNat(), (v) => {
        expect(decodeDecimal(encodeDecimal(v))).toBe(BigInt(v));
      }),
    );
  });

  it('rejects floats, exponents, negatives, leading zeros and > 2^63-1', () => {
    for (const bad of ['', '1.0', '1e3', '-1', '+1', '01', ' 1', '1 ', '9223372036854775808', '0x10', 'Infinity', '１']) {
      expect(() => decodeDecimal(bad)).toThrow(InvalidArgumentError);
    }
    expect(decodeDecimal('9223372036854775807')).toBe(MAX_ID);
    expect(decodeDecimal('0')).toBe(0n);
    expect(() => encodeDecimal(MAX_ID + 1n)).toThrow(InvalidArgumentError);
    expect(() => encodeDecimal(1.5)).toThrow(InvalidArgumentError);
    expect(() => encodeDecimal(-1)).toThrow(InvalidArgumentError);
  });
});
