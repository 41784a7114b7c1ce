import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  type BusinessNumberFormat,
  createBusinessNumberCodec,
  resolveBusinessNumberFormat,
  validateBusinessNumberFormat,
} from './business-number.js';
import { MAX_ID } from '../id.js';
import { InvalidArgumentError, SequoiaError } from '../errors.js';

const KEY = 'order-numbers-secret-2024';
const ORDER: BusinessNumberFormat = { kind: 'permuted-base32', bits: 60, key: KEY, width: 12, check: true };

function thrownMessage(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidArgumentError);
    return (e as Error).message;
  }
  throw new Error('did not throw');
}

describe('validateBusinessNumberFormat', () => {
  it('accepts each kind and returns a clean copy', () => {
    expect(validateBusinessNumberFormat({ kind: 'decimal' })).toEqual({ kind: 'decimal' });
    expect(validateBusinessNumberFormat({ kind: 'base62', width: 8 })).toEqual({ kind: 'base62', width: 8 });
    expect(validateBusinessNumberFormat({ kind: 'hex' })).toEqual({ kind: 'hex' });
    expect(validateBusinessNumberFormat({ kind: 'crockford32', check: true })).toEqual({ kind: 'crockford32', check: true });
    expect(validateBusinessNumberFormat({ ...ORDER, max: '1000000000000' })).toEqual({ ...ORDER, max: '1000000000000' });
  });

  it('names the bad field', () => {
    expect(thrownMessage(() => validateBusinessNumberFormat(null))).toMatch(/^format /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ kind: 'roman' }))).toMatch(/^format\.kind /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ kind: '__proto__' }))).toMatch(/^format\.kind /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ kind: 'base62', width: 0 }))).toMatch(/^format\.width /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ kind: 'base62', widht: 3 }))).toMatch(/^format\.widht /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, bits: 65 }))).toMatch(/^format\.bits /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ kind: 'permuted-base32', key: KEY }))).toMatch(/^format\.bits /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, key: 'short' }))).toMatch(/^format\.key /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, width: 11 }))).toMatch(/^format\.width /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, check: 'yes' }))).toMatch(/^format\.check /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, rounds: 4 }))).toMatch(/^format\.rounds /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, max: '1e9' }))).toMatch(/^format\.max /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ ...ORDER, max: (1n << 61n).toString() }))).toMatch(/^format\.max /);
    expect(thrownMessage(() => validateBusinessNumberFormat({ kind: 'hex', width: 99 }, 'tags.order.format'))).toMatch(
      /^tags\.order\.format\.width /,
    );
  });
});

describe('business-number codecs', () => {
  const kinds: BusinessNumberFormat[] = [
    { kind: 'decimal' },
    { kind: 'hex' },
    { kind: 'hex', width: 16 },
    { kind: 'base62' },
    { kind: 'base62', width: 11 },
    { kind: 'crockford32' },
    { kind: 'crockford32', width: 13, check: true },
    ORDER,
    { kind: 'permuted-base32', bits: 64, key: KEY },
    { kind: 'permuted-base32', bits: 40, key: KEY, max: '1000000000000', check: false },
  ];

  for (const format of kinds) {
    it(`property: ${JSON.stringify(format)} round-trips every ID it can hold`, () => {
      const codec = createBusinessNumberCodec(format);
      fc.assert(
        fc.property(fc.bigInt({ min: 0n, max: codec.limit - 1n }), (id) => {
          const text = codec.encode(id);
          expect(codec.decode(text)).toBe(id);
          if (id <= BigInt(Number.MAX_SAFE_INTEGER)) expect(codec.encode(Number(id))).toBe(text);
        }),
        { numRuns: 3000 },
      );
    });
  }

  it('order numbers: fixed 13 symbols, unique over a run of sequential IDs, read back case-insensitively with hyphens', () => {
    const codec = createBusinessNumberCodec(ORDER);
    const seen = new Set<string>();
    for (let id = 1_000_000; id < 1_100_000; id++) {
      const t = codec.encode(id);
      expect(t).toMatch(/^[0-9A-HJKMNP-TV-Z]{12}[0-9A-HJKMNP-TV-Z*~$=U]$/);
      seen.add(t);
    }
    expect(seen.size).toBe(100_000);
    const t = codec.encode(424242);
    const hyphenated = `${t.slice(0, 4)}-${t.slice(4, 8)}-${t.slice(8)}`.toLowerCase();
    expect(codec.decode(hyphenated)).toBe(424242n);
    // a typo is caught by the check symbol
    const typo = (t[0] === 'A' ? 'B' : 'A') + t.slice(1);
    expect(() => codec.decode(typo)).toThrow(InvalidArgumentError);
  });

  it('a codec with another key does not decode to the original', () => {
    const a = createBusinessNumberCodec(ORDER);
    const b = createBusinessNumberCodec({ ...ORDER, key: KEY + '!' });
    for (let id = 1; id < 2000; id++) expect(b.decode(a.encode(id))).not.toBe(BigInt(id));
  });

  it('too-large IDs are ID_SPACE_EXHAUSTED; non-IDs and foreign text are INVALID_ARGUMENT', () => {
    const order = createBusinessNumberCodec(ORDER);
    expect(() => order.encode(1n << 60n)).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
    expect(() => createBusinessNumberCodec({ kind: 'base62', width: 2 }).encode(3844)).toThrow(
      expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }),
    );
    for (const codec of [order, createBusinessNumberCodec({ kind: 'decimal' })]) {
      for (const bad of [-1, 1.5, Number.NaN, -1n, MAX_ID + 1n]) expect(() => codec.encode(bad)).toThrow(InvalidArgumentError);
      for (const bad of ['', '!', '1e3']) expect(() => codec.decode(bad)).toThrow(InvalidArgumentError);
    }
    expect(() => createBusinessNumberCodec({ kind: 'hex' }).decode('8000000000000000')).toThrow(InvalidArgumentError);
    expect(() => createBusinessNumberCodec({ kind: 'decimal' }).decode('9223372036854775808')).toThrow(SequoiaError);
    expect(() => createBusinessNumberCodec({ kind: 'nope' } as unknown as BusinessNumberFormat)).toThrow(InvalidArgumentError);
  });
});

describe('resolveBusinessNumberFormat', () => {
  it('resolves names first, then key-less specs', () => {
    const named = new Map<string, BusinessNumberFormat>([['order', ORDER]]);
    expect(resolveBusinessNumberFormat('order', named)).toEqual(ORDER);
    expect(resolveBusinessNumberFormat('decimal')).toEqual({ kind: 'decimal' });
    expect(resolveBusinessNumberFormat('hex:16')).toEqual({ kind: 'hex', width: 16 });
    expect(resolveBusinessNumberFormat('base62')).toEqual({ kind: 'base62' });
    expect(resolveBusinessNumberFormat('crockford32:13:check')).toEqual({ kind: 'crockford32', width: 13, check: true });
    expect(resolveBusinessNumberFormat('crockford32:check', named)).toEqual({ kind: 'crockford32', check: true });
  });

  it('rejects the rest with INVALID_ARGUMENT', () => {
    for (const bad of [
      '',
      'order',
      'permuted-base32',
      'base62:0',
      'base62:12',
      'decimal:3',
      'hex:check',
      'BASE62',
      '__proto__',
      'constructor',
    ]) {
      expect(() => resolveBusinessNumberFormat(bad, new Map())).toThrow(InvalidArgumentError);
    }
    expect(thrownMessage(() => resolveBusinessNumberFormat('x', new Map([['order', ORDER]]), 'query.format'))).toMatch(
      /^query\.format .*order/,
    );
  });
});
