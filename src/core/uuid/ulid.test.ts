import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as ulidLib from 'ulid';
import * as uuid from 'uuid';
import { bytesToUlid, ulidTimestampMs, ulidToBytes, ulidToUuid, uuidToUlid } from './ulid.js';
import { UuidV7Generator } from './uuid-v7.js';
import { formatUuid } from './uuid-text.js';
import { systemRandom } from '../random.js';
import { InvalidArgumentError } from '../errors.js';

const bytes16 = fc.uint8Array({ minLength: 16, maxLength: 16 });

describe('ULID text', () => {
  it('property: bytes → ULID → bytes round-trips and keeps the byte order', () => {
    fc.assert(
      fc.property(bytes16, bytes16, (a, b) => {
        const ua = bytesToUlid(a);
        expect(ua).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
        expect(ulidToBytes(ua)).toEqual(a);
        expect(ulidToBytes(ua.toLowerCase())).toEqual(a);
        const ub = bytesToUlid(b);
        expect(ua < ub ? -1 : ua > ub ? 1 : 0).toBe(Math.sign(Buffer.compare(a, b)));
        // the ulid package converts the same way
        expect(ulidLib.uuidToULID(formatUuid(a))).toBe(ua);
        expect(ulidLib.ulidToUUID(ua).toLowerCase()).toBe(formatUuid(a));
      }),
    );
  });

  it('extremes', () => {
    expect(bytesToUlid(new Uint8Array(16))).toBe(ulidLib.MIN_ULID);
    expect(bytesToUlid(new Uint8Array(16).fill(0xff))).toBe(ulidLib.MAX_ULID);
  });

  it('reads aliases and rejects bad text', () => {
    const u = bytesToUlid(Uint8Array.from({ length: 16 }, (_, i) => i * 17));
    const aliased = u.replace(/1/g, 'l').replace(/0/g, 'O');
    expect(ulidToBytes(aliased)).toEqual(ulidToBytes(u));
    expect(() => ulidToBytes('8' + u.slice(1))).toThrow(InvalidArgumentError);
    expect(() => ulidToBytes(u.slice(1))).toThrow(InvalidArgumentError);
    expect(() => ulidToBytes(u.slice(0, 25) + 'U')).toThrow(InvalidArgumentError);
  });

  it('a v7 as ULID decodes (with the ulid package) to the same timestamp, and back', () => {
    let t = 1_700_000_000_000;
    const g = new UuidV7Generator({ clock: { now: () => (t += 3) }, random: systemRandom });
    let prev = '';
    for (let i = 0; i < 2000; i++) {
      const id = g.nextUlid();
      expect(ulidLib.isValid(id)).toBe(true);
      expect(ulidLib.decodeTime(id)).toBe(t);
      expect(ulidTimestampMs(id)).toBe(t);
      expect(id > prev).toBe(true);
      prev = id;
      const asUuid = ulidToUuid(id);
      expect(uuid.version(asUuid)).toBe(7);
      expect(uuidToUlid(asUuid)).toBe(id);
      expect(uuidToUlid(uuid.parse(asUuid))).toBe(id);
    }
  });

  it('Sequoia reads ULIDs from the ulid package', () => {
    for (let i = 0; i < 500; i++) {
      const seed = 1_500_000_000_000 + i * 104_729;
      const id = ulidLib.ulid(seed);
      expect(ulidTimestampMs(id)).toBe(seed);
      expect(formatUuid(ulidToBytes(id))).toBe(ulidLib.ulidToUUID(id).toLowerCase());
    }
  });
});
