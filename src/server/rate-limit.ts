/**
 * Per-client token bucket: each client (its identity, client-gate.ts) holds up to `burst` tokens, refilled at `rate`
 * per second; a request takes one. An empty bucket answers 429 RATE_LIMITED
 * with the seconds until a token is back. The bucket map is bounded: past
 * `maxClients`, the least recently seen client (to the second) is forgotten
 * (it starts full).
 */
import { SequoiaError } from '../core/errors.js';

interface Bucket {
  tokens: number;
  at: number;
  /** When it last moved to the end of the map (the most recent). */
  moved: number;
}

export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
    private readonly maxClients = 100_000,
  ) {
    if (!(rate > 0) || !(burst >= 1)) throw new RangeError('rate must be > 0 and burst >= 1');
  }

  /** Takes a token for `key` or throws RATE_LIMITED. */
  take(key: string, what = 'too many requests'): void {
    const b = this.bucket(key);
    if (b.tokens < 1) {
      const waitMs = ((1 - b.tokens) / this.rate) * 1000;
      throw new SequoiaError('RATE_LIMITED', `${what}; retry in ${Math.ceil(waitMs / 1000)} s`, { retryAfterMs: waitMs });
    }
    b.tokens -= 1;
  }

  /** Takes a token for `key` if there is one. */
  tryTake(key: string): boolean {
    const b = this.bucket(key);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** The key's bucket, refilled up to now. */
  private bucket(key: string): Bucket {
    const t = this.now();
    let b = this.buckets.get(key);
    if (b === undefined) {
      if (this.buckets.size >= this.maxClients) {
        const oldest = this.buckets.keys().next().value;
        if (oldest !== undefined) this.buckets.delete(oldest);
      }
      b = { tokens: this.burst, at: t, moved: t };
      this.buckets.set(key, b);
    } else {
      // Map order is recency order, to the second: moving a busy client on every request costs the hot path.
      if (t - b.moved >= 1000) {
        this.buckets.delete(key);
        this.buckets.set(key, b);
        b.moved = t;
      }
      b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.rate);
      b.at = t;
    }
    return b;
  }
}
