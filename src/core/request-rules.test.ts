import { describe, expect, it } from 'vitest';
import { SequoiaError } from './errors.js';
import {
  LAYOUT_NAME,
  MAX_COUNT,
  assertCount,
  assertShard,
  countFromText,
  idsJson,
  parseCount,
  parseLayoutName,
  parseShard,
  shardOf,
  snowflakeIdsJson,
} from './request-rules.js';
import { defineLayout, getLayout } from './snowflake/layout.js';

describe('request rules', () => {
  it('count text: plain decimal from 1 to MAX_COUNT, nothing else', () => {
    expect(countFromText('1')).toBe(1);
    expect(countFromText(String(MAX_COUNT))).toBe(MAX_COUNT);
    for (const bad of ['0', '', '01', '1e3', '+1', ' 1', '1.0', String(MAX_COUNT + 1), '99999', 'abc'])
      expect(countFromText(bad), bad).toBeUndefined();
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

  it('layout names: a lower-case letter, then up to 39 of a-z 0-9 _ -; absent means the default', () => {
    expect(parseLayoutName(undefined)).toBeUndefined();
    expect(parseLayoutName('twitter')).toBe('twitter');
    expect(parseLayoutName(`a${'b'.repeat(39)}`)).toHaveLength(40);
    for (const bad of ['', 'Twitter', '1x', `a${'b'.repeat(40)}`, 'a b', ['twitter']]) {
      expect(() => parseLayoutName(bad), String(bad)).toThrow('layout must be a layout name');
    }
    // The same rule names custom layouts: a name the parameter refuses cannot be defined.
    expect(LAYOUT_NAME.test('Discord')).toBe(false);
    expect(() => defineLayout({ ...getLayout('twitter'), name: 'Discord' })).toThrow(LAYOUT_NAME.source);
  });

  it('shards: exactly one of shard and shardKey on a sharded layout, neither on others', () => {
    const ig = getLayout('instagram');
    const shards = 2 ** ig.shardBits;
    expect(parseShard(ig, { shard: '0' })).toBe(0);
    expect(parseShard(ig, { shard: String(shards - 1) })).toBe(shards - 1);
    expect(parseShard(ig, { shardKey: 'user-42' })).toBe(shardOf('user-42', shards));
    expect(() => parseShard(ig, {})).toThrow(`needs shard (0..${shards - 1}) or shardKey`);
    expect(() => parseShard(ig, { shard: '1', shardKey: 'k' })).toThrow('not both');
    for (const bad of [String(shards), '-1', '01', '1.5', 'x', ''])
      expect(() => parseShard(ig, { shard: bad }), bad).toThrow(`from 0 to ${shards - 1}`);
    for (const bad of ['', 'k'.repeat(257)]) expect(() => parseShard(ig, { shardKey: bad })).toThrow('shardKey must be 1-256 characters');
    const tw = getLayout('twitter');
    expect(parseShard(tw, {})).toBe(0);
    expect(() => parseShard(tw, { shard: '0' })).toThrow('layout twitter has no shard field');
    expect(assertShard(ig, shards - 1)).toBe(shards - 1);
    for (const bad of [shards, -1, 0.5, Number.NaN]) expect(() => assertShard(ig, bad)).toThrow(SequoiaError);
  });

  it('shardOf is FNV-1a 32-bit mod the shard count (stable across versions: stored keys depend on it)', () => {
    expect(shardOf('', 1 << 13)).toBe(0x811c9dc5 % (1 << 13));
    expect(shardOf('a', 2 ** 32)).toBe(0xe40c292c);
  });

  it('snowflakeIdsJson is the JSON of {layout, ids}', () => {
    expect(JSON.parse(snowflakeIdsJson('twitter', ['1', '2']))).toEqual({ layout: 'twitter', ids: ['1', '2'] });
  });
});
