import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { businessNumberFormatSpec, createPrefixedIdCodec, explainPrefixedId, parsePrefixedId, splitPrefixedId } from './prefixed-id.js';
import { MAX_ID } from '../id.js';
import { SequoiaError } from '../errors.js';
import { getLayout } from '../snowflake/layout.js';
import { explainId } from '../snowflake/explain.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof SequoiaError ? e.code : 'not a SequoiaError';
  }
  return undefined;
}

describe('prefixed IDs (ord_…)', () => {
  it('write any 63-bit ID as prefix_ + 11 base62 symbols that sort like the number, and read it back', () => {
    const ord = createPrefixedIdCodec('ord');
    expect(ord.encode(1000000)).toBe('ord_00000004C92');
    expect(ord.encode(MAX_ID)).toBe('ord_AzL8n0Y58m7');
    expect(ord.decode('ord_00000004C92')).toBe(1000000n);
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX_ID }), fc.bigInt({ min: 0n, max: MAX_ID }), (a, b) => {
        const [x, y] = [ord.encode(a), ord.encode(b)];
        expect(ord.decode(x)).toBe(a);
        expect(x < y).toBe(a < b);
      }),
    );
  });

  it('take another business-number format, and say which', () => {
    const c = createPrefixedIdCodec('sk_live', { kind: 'crockford32', width: 13, check: true });
    const t = c.encode(42n);
    expect(t).toBe('sk_live_000000000001A5');
    expect(c.decode(t)).toBe(42n);
    expect(parsePrefixedId(t, c.format)).toEqual({ prefix: 'sk_live', value: 42n });
    expect(businessNumberFormatSpec(c.format)).toBe('crockford32:13:check');
    expect(businessNumberFormatSpec({ kind: 'base62', width: 11 })).toBe('base62:11');
    expect(businessNumberFormatSpec({ kind: 'decimal' })).toBe('decimal');
  });

  it('refuse bad prefixes and suffixes with INVALID_ARGUMENT saying which part', () => {
    const ord = createPrefixedIdCodec('ord');
    expect(() => createPrefixedIdCodec('Ord')).toThrow(/"Ord" is not a type prefix: at most 63 lowercase letters/);
    expect(codeOf(() => createPrefixedIdCodec(''))).toBe('INVALID_ARGUMENT');
    expect(() => ord.decode('cus_00000004C92')).toThrow(/has prefix "cus", expected "ord"/);
    expect(() => ord.decode('00000004C92')).toThrow(/not a prefixed ID: expected ord_/);
    expect(() => ord.decode('ord_0000004C92')).toThrow(/the part after the prefix is not an ID: .*11 characters/);
    expect(() => parsePrefixedId('ORD_00000004C92')).toThrow(/is not a prefixed ID: expected a type prefix/);
    expect(codeOf(() => parsePrefixedId('ord_0000000!C92'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => parsePrefixedId('ord_zzzzzzzzzzz'))).toBe('INVALID_ARGUMENT'); // above 2^63-1
    expect(codeOf(() => ord.encode(-1))).toBe('INVALID_ARGUMENT');
    expect(splitPrefixedId('pre_fix_abc')).toEqual({ prefix: 'pre_fix', rest: 'abc' });
    expect(splitPrefixedId('_abc')).toBeUndefined();
  });

  it('explain like the bare ID, plus the prefix and format', () => {
    const twitter = getLayout('twitter');
    const id = '1861234567890123456';
    const text = createPrefixedIdCodec('ord').encode(BigInt(id));
    expect(explainPrefixedId(text, twitter)).toEqual({
      ...explainId(id, twitter),
      id: text,
      prefix: 'ord',
      format: 'base62:11',
      value: id,
    });
  });
});
