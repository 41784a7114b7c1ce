import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as uuid from 'uuid';
import { describeUuid, formatUuid, isValidUuid, parseUuid, tryParseUuid } from './uuid-text.js';
import { UuidV4Generator } from './uuid-v4.js';
import { systemRandom } from '../random.js';
import { InvalidArgumentError } from '../errors.js';

const bytes16 = fc.uint8Array({ minLength: 16, maxLength: 16 });

describe('UUID text', () => {
  it('accepts lower, upper, braces and URN forms of the same UUID', () => {
    const canonical = '017f22e2-79b0-7cc3-98c4-dc0c0c07398f';
    for (const form of [
      canonical,
      canonical.toUpperCase(),
      `{${canonical}}`,
      `{${canonical.toUpperCase()}}`,
      `urn:uuid:${canonical}`,
      `URN:UUID:${canonical.toUpperCase()}`,
    ]) {
      const p = parseUuid(form);
      expect(p.text).toBe(canonical);
      expect(p.version).toBe(7);
      expect(p.variant).toBe('rfc9562');
      expect(isValidUuid(form)).toBe(true);
    }
  });

  it('rejects near misses with INVALID_ARGUMENT', () => {
    const canonical = '017f22e2-79b0-7cc3-98c4-dc0c0c07398f';
    for (const bad of [
      '',
      canonical.slice(1),
      canonical + '0',
      canonical.replace(/-/g, ''),
      canonical.replace('-', '_'),
      `{${canonical}`,
      `${canonical}}`,
      `[${canonical}]`,
      `urn:uuid:{${canonical}}`,
      `uuid:${canonical}`,
      canonical.replace('f', 'g'),
      ` ${canonical}`,
      '017f22e2-79b0-7cc3-98c4-dc0c0c07398\u0660',
    ]) {
      expect(tryParseUuid(bad)).toBeUndefined();
      expect(() => parseUuid(bad)).toThrow(InvalidArgumentError);
      expect(isValidUuid(bad)).toBe(false);
    }
  });

  it('property: bytes → text → bytes round-trips, in every accepted form', () => {
    fc.assert(
      fc.property(bytes16, fc.constantFrom('plain', 'upper', 'braces', 'urn'), (b, form) => {
        const t = formatUuid(b);
        const text = form === 'plain' ? t : form === 'upper' ? t.toUpperCase() : form === 'braces' ? `{${t}}` : `urn:uuid:${t}`;
        const p = parseUuid(text);
        expect(p.bytes).toEqual(b);
        expect(p.version).toBe(b[6]! >> 4);
        const hex = Buffer.from(b).toString('hex');
        expect(t).toBe(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
      }),
    );
  });

  it('property: isValidUuid agrees with uuid.validate on canonical text', () => {
    fc.assert(
      fc.property(bytes16, (b) => {
        const t = formatUuid(b);
        expect(isValidUuid(t)).toBe(uuid.validate(t));
      }),
      { numRuns: 2000 },
    );
    for (const t of [uuid.NIL, uuid.MAX]) expect(isValidUuid(t)).toBe(uuid.validate(t));
  });

  it('reports variants', () => {
    expect(parseUuid('00000000-0000-4000-0000-000000000000').variant).toBe('ncs');
    expect(parseUuid('00000000-0000-4000-8000-000000000000').variant).toBe('rfc9562');
    expect(parseUuid('00000000-0000-4000-c000-000000000000').variant).toBe('microsoft');
    expect(parseUuid('00000000-0000-4000-e000-000000000000').variant).toBe('future');
  });

  it('decodes v1 and v6 timestamps like the uuid package encodes them', () => {
    for (const msecs of [0, 1, 1_234_567_890_123, 1_700_000_000_999, Date.now()]) {
      expect(describeUuid(uuid.v1({ msecs })).timestampMs).toBe(msecs);
      expect(describeUuid(uuid.v6({ msecs })).timestampMs).toBe(msecs);
      expect(describeUuid(uuid.v7({ msecs })).timestampMs).toBe(msecs);
    }
    expect(describeUuid(uuid.v4()).timestampMs).toBeUndefined();
  });
});

describe('UUIDv4', () => {
  it('has version 4, variant 10, and the uuid package agrees', () => {
    const g = new UuidV4Generator({ random: systemRandom });
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const t = g.next();
      expect(uuid.validate(t)).toBe(true);
      expect(uuid.version(t)).toBe(4);
      const p = parseUuid(t);
      expect(p.version).toBe(4);
      expect(p.variant).toBe('rfc9562');
      seen.add(t);
    }
    expect(seen.size).toBe(20_000);
  });

  it('bytes form matches the text rules, and uses every free bit', () => {
    const g = new UuidV4Generator({ random: systemRandom });
    let or = new Uint8Array(16);
    let and = new Uint8Array(16).fill(0xff);
    for (let i = 0; i < 2000; i++) {
      const b = g.nextBytes();
      expect(uuid.version(formatUuid(b))).toBe(4);
      or = or.map((v, k) => v | b[k]!);
      and = and.map((v, k) => v & b[k]!);
    }
    // all bits vary except the 6 fixed version/variant bits
    expect(Buffer.from(or).toString('hex')).toBe('ffffffffffff4fffbfffffffffffffff');
    expect(Buffer.from(and).toString('hex')).toBe('00000000000040008000000000000000');
  });

  it('is deterministic over an injected Random', () => {
    const fill = (b: Uint8Array) => b.forEach((_, i) => (b[i] = i & 0xff));
    const g = new UuidV4Generator({ random: { fill } });
    expect(g.next()).toBe('00010203-0405-4607-8809-0a0b0c0d0e0f');
    expect(formatUuid(g.nextBytes())).toBe('10111213-1415-4617-9819-1a1b1c1d1e1f');
  });

  it('Sequoia parses what the uuid package generates', () => {
    for (let i = 0; i < 1000; i++) {
      const t = uuid.v4();
      expect(parseUuid(t).bytes).toEqual(uuid.parse(t));
      expect(parseUuid(t).version).toBe(4);
    }
  });
});
