import { describe, expect, it } from 'vitest';
import { PooledSystemRandom, type Random, randomUnit } from './random.js';

describe('PooledSystemRandom', () => {
  it('fills small and large requests, never handing out the same pool bytes twice', () => {
    const r = new PooledSystemRandom(256);
    const chunks = Array.from({ length: 64 }, () => {
      const b = new Uint8Array(16);
      r.fill(b);
      return Buffer.from(b).toString('hex');
    });
    expect(new Set(chunks).size).toBe(64);
    const big = new Uint8Array(4096);
    r.fill(big);
    expect(big.some((v) => v !== 0)).toBe(true);
    const empty = new Uint8Array(0);
    r.fill(empty);
  });

  it('bytes look uniform', () => {
    const r = new PooledSystemRandom();
    const counts = new Array<number>(256).fill(0);
    const b = new Uint8Array(100);
    for (let i = 0; i < 2560; i++) {
      r.fill(b);
      for (const v of b) counts[v]!++;
    }
    // 1000 expected per value; 6 sigma is about ±190
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(200);
  });

  it('rejects a silly pool size', () => {
    expect(() => new PooledSystemRandom(10)).toThrow(RangeError);
  });
});

describe('randomUnit', () => {
  const bytes = (first: number, rest: number): Random => ({ fill: (b) => b.fill(rest).fill(first, 0, 1) });
  it('maps the bytes to [0, 1) with 53 bits, high bits first, like Math.random', () => {
    expect(randomUnit(bytes(0, 0))).toBe(0);
    expect(randomUnit(bytes(0x80, 0))).toBe(0.5);
    expect(randomUnit(bytes(0xc0, 0))).toBe(0.75);
    expect(randomUnit(bytes(0xff, 0xff))).toBe(1 - 2 ** -53);
  });
});
