import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  CROCKFORD32_CHECK_ALPHABET,
  crockford32CheckSymbol,
  decodeCrockford32,
  encodeCrockford32,
  encodeCrockford32Parts,
} from './crockford32.js';
import { InvalidArgumentError } from '../errors.js';

describe('Crockford Base32: published samples', () => {
  // Samples from the base32-crockford reference implementation's documentation.
  it('encodes 1234 as 16J, with check symbol 16JD', () => {
    expect(encodeCrockford32(1234)).toBe('16J');
    expect(encodeCrockford32(1234n, { check: true })).toBe('16JD');
    expect(decodeCrockford32('16JD', { check: true })).toBe(1234n);
    expect(decodeCrockford32('16j')).toBe(1234n);
  });

  it('encodes 100^10 as 02PQH-TY5NH-H0000 and reads the hyphenated, aliased form', () => {
    expect(encodeCrockford32(100n ** 10n, { width: 15 })).toBe('02PQHTY5NHH0000');
    expect(decodeCrockford32('02PQH-TY5NH-H0000')).toBe(100n ** 10n);
    expect(decodeCrockford32('2pqh-ty5nh-hoooo')).toBe(100n ** 10n);
  });

  it('reads I and L as 1, O as 0, in any case', () => {
    expect(decodeCrockford32('IlLi')).toBe(decodeCrockford32('1111'));
    expect(decodeCrockford32('oO0')).toBe(0n);
    expect(decodeCrockford32('abcdefghjkmnpqrstvwxyz')).toBe(decodeCrockford32('ABCDEFGHJKMNPQRSTVWXYZ'));
  });

  it('uses the check alphabet *~$=U for 32..36', () => {
    expect(CROCKFORD32_CHECK_ALPHABET.slice(32)).toBe('*~$=U');
    for (let v = 0; v < 37; v++) expect(crockford32CheckSymbol(v)).toBe(CROCKFORD32_CHECK_ALPHABET[v]);
    expect(encodeCrockford32(32, { check: true })).toBe('10*');
    expect(encodeCrockford32(36, { check: true })).toBe('14U');
    expect(decodeCrockford32('14u', { check: true })).toBe(36n);
  });
});

describe('Crockford Base32: round trips', () => {
  it('property: any bigint, with and without width and check symbol', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 160n) - 1n }), fc.boolean(), fc.integer({ min: 0, max: 5 }), (v, check, extra) => {
        const bare = encodeCrockford32(v);
        expect(bare).toMatch(/^[0-9A-HJKMNP-TV-Z]+$/);
        expect(decodeCrockford32(bare)).toBe(v);
        const width = bare.length + extra;
        const s = encodeCrockford32(v, { width, check });
        expect(s.length).toBe(width + (check ? 1 : 0));
        expect(decodeCrockford32(s, { width, check })).toBe(v);
        expect(decodeCrockford32(s.toLowerCase(), { width, check })).toBe(v);
      }),
      { numRuns: 2000 },
    );
  });

  it('property: the parts encoder agrees with the bigint encoder', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.boolean(), (v, check) => {
        const width = Math.max(1, Math.ceil(v.toString(2).length / 5));
        const hi = Number(v >> 32n);
        const lo = Number(v & 0xffffffffn);
        expect(encodeCrockford32Parts(hi, lo, width, check)).toBe(encodeCrockford32(v, { width, check }));
        expect(encodeCrockford32Parts(hi, lo, 13, check)).toBe(encodeCrockford32(v, { width: 13, check }));
      }),
      { numRuns: 5000 },
    );
  });

  it('property: a single mistyped symbol is caught by the check symbol', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 60n) - 1n }), fc.nat(), fc.integer({ min: 1, max: 31 }), (v, pos, delta) => {
        const s = encodeCrockford32(v, { width: 12, check: true });
        const i = pos % 12;
        const alphabet = CROCKFORD32_CHECK_ALPHABET.slice(0, 32);
        const wrong = s.slice(0, i) + alphabet[(alphabet.indexOf(s[i]!) + delta) % 32] + s.slice(i + 1);
        expect(() => decodeCrockford32(wrong, { width: 12, check: true })).toThrow(InvalidArgumentError);
      }),
    );
  });

  it('rejects bad input with INVALID_ARGUMENT', () => {
    for (const bad of ['', '-', 'U', '1U2', '12*', 'ab+c', '\u00e9', ' 12']) {
      expect(() => decodeCrockford32(bad)).toThrow(InvalidArgumentError);
    }
    expect(() => decodeCrockford32('16JE', { check: true })).toThrow(InvalidArgumentError);
    expect(() => decodeCrockford32('', { check: true })).toThrow(InvalidArgumentError);
    expect(() => decodeCrockford32('D', { check: true })).toThrow(InvalidArgumentError);
    expect(() => decodeCrockford32('016J', { width: 3 })).toThrow(InvalidArgumentError);
    expect(() => encodeCrockford32(1234, { width: 2 })).toThrow(InvalidArgumentError);
    expect(() => encodeCrockford32(-1)).toThrow(InvalidArgumentError);
    expect(() => encodeCrockford32(2 ** 53)).toThrow(InvalidArgumentError);
  });
});
