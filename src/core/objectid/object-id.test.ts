import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ObjectId } from 'bson';
import { ObjectIdGenerator, formatObjectId, parseObjectId } from './object-id.js';
import { systemRandom } from '../random.js';
import { InvalidArgumentError } from '../errors.js';

const fixedRandom = (bytes: number[]) => ({
  fill: (b: Uint8Array) => {
    for (let i = 0; i < b.length; i++) b[i] = bytes[i % bytes.length]!;
  },
});

describe('ObjectId', () => {
  it('lays out seconds, process random and counter', () => {
    const gen = new ObjectIdGenerator({
      clock: { now: () => 1_700_000_123_999 },
      random: fixedRandom([0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0x12, 0x34, 0x56]),
    });
    const s = (1_700_000_123).toString(16).padStart(8, '0');
    expect(gen.next()).toBe(`${s}a1b2c3d4e5123456`);
    expect(gen.next()).toBe(`${s}a1b2c3d4e5123457`);
    expect(formatObjectId(gen.nextBytes())).toBe(`${s}a1b2c3d4e5123458`);
    const p = parseObjectId(`${s}A1B2C3D4E5123459`);
    expect(p).toMatchObject({ timestampSeconds: 1_700_000_123, processUnique: 'a1b2c3d4e5', counter: 0x123459 });
  });

  it('counter wraps at 2^24', () => {
    const gen = new ObjectIdGenerator({ clock: { now: () => 0 }, random: fixedRandom([1, 2, 3, 4, 5, 0xff, 0xff, 0xfe]) });
    expect(parseObjectId(gen.next()).counter).toBe(0xfffffe);
    expect(parseObjectId(gen.next()).counter).toBe(0xffffff);
    expect(parseObjectId(gen.next()).counter).toBe(0);
  });

  it('bson accepts Sequoia ObjectIds with the same timestamp', () => {
    let t = 1_650_000_000_000;
    const gen = new ObjectIdGenerator({ clock: { now: () => (t += 250) }, random: systemRandom });
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const hex = gen.next();
      const o = new ObjectId(hex);
      expect(o.toHexString()).toBe(hex);
      expect(o.getTimestamp().getTime()).toBe(Math.floor(t / 1000) * 1000);
      seen.add(hex);
      const bytes = gen.nextBytes();
      expect(new ObjectId(bytes).toHexString()).toBe(formatObjectId(bytes));
    }
    expect(seen.size).toBe(5000);
  });

  it('Sequoia parses bson ObjectIds', () => {
    for (let i = 0; i < 1000; i++) {
      const o = new ObjectId();
      const p = parseObjectId(o.toHexString());
      expect(p.text).toBe(o.toHexString());
      expect(p.timestampSeconds * 1000).toBe(o.getTimestamp().getTime());
      expect(p.bytes).toEqual(new Uint8Array(o.id));
    }
  });

  it('property: any 12 bytes round-trip; bad text is INVALID_ARGUMENT', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 12, maxLength: 12 }), (b) => {
        const hex = formatObjectId(b);
        expect(parseObjectId(hex.toUpperCase()).bytes).toEqual(b);
        expect(ObjectId.isValid(hex)).toBe(true);
      }),
    );
    for (const bad of ['', '0'.repeat(23), '0'.repeat(25), 'g'.repeat(24), ' '.repeat(24)]) {
      expect(() => parseObjectId(bad)).toThrow(InvalidArgumentError);
    }
  });
});
