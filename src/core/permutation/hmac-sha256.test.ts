import { createHash, createHmac } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FeistelPermutation } from './feistel-permutation.js';
import { hmacSha256, roundKeyHmac, sha256 } from './hmac-sha256.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 17 + 7) & 0xff);

describe('the round keys without node:crypto (Node before 20.16)', () => {
  it('sha256 answers as node:crypto for every length around the block and padding edges', () => {
    for (const n of [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000]) {
      expect(hex(sha256(bytes(n, n))), `length ${n}`).toBe(createHash('sha256').update(bytes(n, n)).digest('hex'));
    }
  });

  it('hmacSha256 answers as node:crypto, keys shorter and longer than a block', () => {
    for (const [k, m] of [
      [16, 'sequoia/feistel/v1/w64/r8/b0'],
      [32, 'sequoia/feistel/v1/w10/r64/b7'],
      [64, ''],
      [65, 'é ü 日本'],
      [200, 'x'.repeat(300)],
    ] as const) {
      const key = bytes(k, k);
      expect(hex(hmacSha256(key, m)), `key ${k}`).toBe(createHmac('sha256', key).update(m).digest('hex'));
    }
  });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('roundKeyHmac takes the same answer whichever path it takes', () => {
    const key = bytes(16, 1);
    const viaNode = hex(roundKeyHmac(key, 'm'));
    vi.stubGlobal('process', { ...process, getBuiltinModule: undefined });
    expect(hex(roundKeyHmac(key, 'm'))).toBe(viaNode);
  });

  // Pinned from the build before this file (round keys from node:crypto through createRequire): a permuted number
  // stored once must decode the same forever.
  it.each([
    ['node:crypto', false],
    ['this file', true],
  ])('permutations keyed through %s permute as before', (_, older) => {
    if (older) vi.stubGlobal('process', { ...process, getBuiltinModule: undefined });
    const p = new FeistelPermutation({ bits: 64, key: 'sequoia-test-key-0123' });
    const q = new FeistelPermutation({ bits: 40, key: 'sequoia-test-key-0123', rounds: 20, max: 10n ** 12n });
    expect([p.encrypt(1n), p.encrypt(123456789n), q.encrypt(42n)]).toEqual([14302089736147636629n, 10608387199586439263n, 578416528469n]);
  });
});
