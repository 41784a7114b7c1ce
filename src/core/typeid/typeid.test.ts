import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { TypeID } from 'typeid-js';
import { describeTypeId, formatTypeId, isValidTypeIdPrefix, parseTypeId, tryParseTypeId, TypeIdGenerator } from './typeid.js';
import { systemRandom } from '../random.js';
import { SequoiaError } from '../errors.js';

/**
 * The spec's own vectors (test/fixtures/typeid/SOURCE.md says where from). The
 * files are a list of flat `key: "value"` maps; this reads exactly that shape
 * and fails loudly on anything else rather than skip a vector.
 */
function readVectors(name: string): Record<string, string>[] {
  const text = readFileSync(new URL(`../../../test/fixtures/typeid/${name}`, import.meta.url), 'utf8');
  const out: Record<string, string>[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^\s*#.*$/, '');
    if (line.trim() === '') continue;
    const m = /^(- | {2})([a-z]+): (?:"(.*)"|([^"#]+))\s*$/.exec(line);
    if (m === null) throw new Error(`unexpected line in ${name}: ${raw}`);
    if (m[1] === '- ') out.push({});
    out[out.length - 1]![m[2]!] = m[3] ?? m[4]!.trim();
  }
  return out;
}

const valid = readVectors('valid.yml');
const invalid = readVectors('invalid.yml');

describe('TypeID spec v0.3 vectors', () => {
  it('reads every vector of both files', () => {
    expect(valid.map((v) => v.name)).toEqual([
      'nil',
      'one',
      'ten',
      'sixteen',
      'thirty-two',
      'max-valid',
      'valid-alphabet',
      'valid-uuidv7',
      'prefix-underscore',
    ]);
    expect(invalid).toHaveLength(19);
  });

  it.each(valid.map((v) => [v.name!, v] as const))('valid: %s decodes and encodes both ways', (_, v) => {
    const p = parseTypeId(v.typeid!);
    expect(p.prefix).toBe(v.prefix);
    expect(p.uuid).toBe(v.uuid);
    expect(formatTypeId(v.prefix!, v.uuid!)).toBe(v.typeid);
    expect(formatTypeId(v.prefix!, p.bytes)).toBe(v.typeid);
  });

  it.each(invalid.map((v) => [v.name!, v] as const))('invalid: %s is refused with INVALID_ARGUMENT', (_, v) => {
    expect(tryParseTypeId(v.typeid!)).toBeUndefined();
    let err: unknown;
    try {
      parseTypeId(v.typeid!);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SequoiaError);
    expect((err as SequoiaError).code).toBe('INVALID_ARGUMENT');
    expect((err as Error).message).toMatch(/is not a TypeID/);
  });
});

describe('TypeID', () => {
  it('says which part is wrong', () => {
    expect(() => parseTypeId('_00000000000000000000000000')).toThrow(/empty prefix is written without "_"/);
    expect(() => parseTypeId('Ord_00000000000000000000000000')).toThrow(/prefix must be at most 63 lowercase letters/);
    expect(() => parseTypeId('ord_0000000000000000000000000')).toThrow(/26 symbols, got 25/);
    expect(() => parseTypeId('ord_8zzzzzzzzzzzzzzzzzzzzzzzzz')).toThrow(/more than 128 bits/);
    expect(() => parseTypeId('ord_0000000000000000000000000u')).toThrow(/may only use 0123456789abcdefghjkmnpqrstvwxyz/);
    expect(() => parseTypeId('user_01h455vb4pex5vsknk084sn02q', 'order')).toThrow(/prefix is "user", expected "order"/);
    expect(() => formatTypeId('Order', '01890a5d-ac96-774b-bcce-b302099a8057')).toThrow(/not a TypeID prefix/);
    expect(isValidTypeIdPrefix('a'.repeat(63))).toBe(true);
    expect(isValidTypeIdPrefix('a'.repeat(64))).toBe(false);
  });

  it('generates UUIDv7 TypeIDs, rising within a prefix, that explain to their time', () => {
    let t = Date.UTC(2026, 11, 5, 10, 0, 0);
    const g = new TypeIdGenerator({ prefix: 'order', clock: { now: () => t }, random: systemRandom });
    const ids: string[] = [];
    for (let i = 0; i < 3000; i++) {
      if (i % 1000 === 999) t -= 5000; // a clock stepped back: still rising
      ids.push(g.next());
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const d = describeTypeId(ids[0]!);
    expect(d).toMatchObject({ prefix: 'order', version: 7, variant: 'rfc9562', timestampMs: Date.UTC(2026, 11, 5, 10, 0, 0) });
    expect(d.uuid).toBe(parseTypeId(ids[0]!).uuid);
    expect(() => new TypeIdGenerator({ prefix: 'Order', clock: { now: () => t }, random: systemRandom })).toThrow(/not a TypeID prefix/);
  });

  it('agrees with typeid-js 1.2.0 on 5,000 random values, both ways', () => {
    const prefixes = ['', 'user', 'pre_fix', 'a'.repeat(63), 'x'];
    for (let i = 0; i < 5000; i++) {
      const prefix = prefixes[i % prefixes.length]!;
      const bytes = i % 2 === 0 ? new Uint8Array(randomBytes(16)) : undefined;
      // Half arbitrary 128-bit values, half typeid-js's own UUIDv7 TypeIDs.
      const theirs = bytes === undefined ? new TypeID(prefix) : TypeID.fromUUIDBytes(prefix, bytes);
      const text = theirs.toString();
      // typeid-js's toUUID() refuses text that is not an RFC UUID, so compare bytes (arbitrary 128-bit values are valid TypeIDs).
      const theirBytes = theirs.toUUIDBytes();
      expect(formatTypeId(prefix, theirBytes)).toBe(text);
      const ours = parseTypeId(text);
      expect(Buffer.from(ours.bytes).equals(Buffer.from(theirBytes))).toBe(true);
      expect(ours.prefix).toBe(prefix);
      expect(TypeID.fromString(formatTypeId(prefix, ours.bytes)).toString()).toBe(text);
    }
    const g = new TypeIdGenerator({ prefix: 'user', clock: { now: () => Date.now() }, random: systemRandom });
    for (let i = 0; i < 1000; i++) {
      const id = g.next();
      const theirs = TypeID.fromString(id, 'user');
      expect(theirs.toUUID()).toBe(parseTypeId(id).uuid);
      expect(theirs.toUUID()[14]).toBe('7');
    }
  });
});
