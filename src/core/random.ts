/**
 * Randomness for the core. Generators take a `Random` and draw their bytes from
 * it in large slices (they keep their own pools), so the per-ID path never
 * calls into the CSPRNG. Tests inject a scripted `Random` to reproduce vectors.
 */
/** Web Crypto's most bytes per getRandomValues call. */
const MAX_DRAW = 65536;

/**
 * The system CSPRNG through Web Crypto (global in Node 20+, browsers, edge
 * runtimes): no `node:` import, so `sequoia-id/client`, which draws its
 * jitter and fallback worker ids here, stays loadable outside Node.
 */
function randomFillSync(bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length; at += MAX_DRAW) globalThis.crypto.getRandomValues(bytes.subarray(at, at + MAX_DRAW));
}

export interface Random {
  /** Overwrites every byte of `bytes` with fresh random bytes. Never hands out the same bytes twice. */
  fill(bytes: Uint8Array): void;
}

/** Requests at least this large bypass the pool (the caller is pooling already). */
const DIRECT_THRESHOLD = 1024;

/**
 * The system CSPRNG (Web Crypto's `getRandomValues`) behind a pool refilled `poolSize`
 * bytes at a time (default 8 KiB), so small requests cost a copy, not a syscall.
 * Each pool byte is handed out at most once.
 */
export class PooledSystemRandom implements Random {
  private readonly pool: Uint8Array;
  private pos: number;

  constructor(poolSize = 8192) {
    if (!Number.isSafeInteger(poolSize) || poolSize < 256 || poolSize > 1 << 20) {
      throw new RangeError('poolSize must be an integer from 256 to 1048576');
    }
    this.pool = new Uint8Array(poolSize);
    this.pos = poolSize;
  }

  fill(bytes: Uint8Array): void {
    const n = bytes.length;
    if (n >= DIRECT_THRESHOLD || n > this.pool.length) {
      randomFillSync(bytes);
      return;
    }
    if (this.pos + n > this.pool.length) {
      randomFillSync(this.pool);
      this.pos = 0;
    }
    const pool = this.pool;
    const start = this.pos;
    for (let i = 0; i < n; i++) bytes[i] = pool[start + i]!;
    this.pos = start + n;
  }
}

/** The process-wide system random source (wired at the edge, like `systemClock`). */
export const systemRandom: Random = new PooledSystemRandom();

const unitBytes = new Uint8Array(7);

/** A number in [0, 1) from `random`, as Math.random gives (53 bits). For rare draws (a jitter): it fills 7 bytes each call. */
export function randomUnit(random: Random): number {
  random.fill(unitBytes);
  let hi = 0;
  for (let i = 0; i < 3; i++) hi = hi * 256 + unitBytes[i]!;
  let lo = 0;
  for (let i = 3; i < 7; i++) lo = lo * 256 + unitBytes[i]!;
  // The top 21 bits of the first three bytes and 32 more: 53 bits, scaled by 2^-53.
  return ((hi >>> 3) * 2 ** 32 + lo) / 2 ** 53;
}
