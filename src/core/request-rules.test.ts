import { describe, expect, it } from 'vitest';
import { SequoiaError } from './errors.js';
import { MAX_COUNT, assertCount, countFromText, idsJson, parseCount } from './request-rules.js';

describe('request rules', () => {
  it('count text: plain decimal from 1 to MAX_COUNT, nothing else', () => {
    expect(countFromText('1')).toBe(1);
    expect(countFromText(String(MAX_COUNT))).toBe(MAX_COUNT);
    for (const bad of ['0', '', '01', '1e3', '+1', ' 1', '1.0', String(MAX_COUNT + 1), '99999', 'abc']) expect(countFromText(bad), bad).toBeUndefined();
  });

  it('parseCount: 1 when absent, INVALID_ARGUMENT naming the range otherwise', () => {
    expect(parseCount(undefined)).toBe(1);
    expect(parseCount('42')).toBe(42);
    for (const bad of ['0', '10001', 5, ['1']]) {
      expect(() => parseCount(bad)).toThrow(SequoiaError);
      expect(() => parseCount(bad)).toThrow(`count must be an integer from 1 to ${MAX_COUNT}`);
    }
  });

  it('assertCount for numbers', () => {
    expect(assertCount(MAX_COUNT)).toBe(MAX_COUNT);
    for (const bad of [0, MAX_COUNT + 1, 1.5, Number.NaN]) expect(() => assertCount(bad)).toThrow(SequoiaError);
  });

  it('idsJson is the JSON of {tag, ids} with IDs as decimal strings, past 2^53 too', () => {
    const text = idsJson('order', [1, 2 ** 53 - 1, 2n ** 62n]);
    expect(JSON.parse(text)).toEqual({ tag: 'order', ids: ['1', '9007199254740991', '4611686018427387904'] });
  });
});
