import { describe, expect, it } from 'vitest';
import {
  FALLBACK_EPOCH_MS,
  FALLBACK_FLOOR,
  FallbackIssuer,
  decodeFallbackId,
  encodeFallbackId,
  fallbackHoldingSpan,
  fallbackNotAfterMs,
} from './fallback-space.js';

describe('fallback space', () => {
  it('puts every ID at or above 2^62 and below 2^63, and decodes what it encodes', () => {
    const ms = Date.UTC(2026, 11, 1);
    const id = encodeFallbackId(ms, 1023, 2047);
    expect(id >= FALLBACK_FLOOR && id < 1n << 63n).toBe(true);
    expect(decodeFallbackId(id)).toEqual({ timestampMs: ms, workerId: 1023, sequence: 2047 });
    expect(encodeFallbackId(FALLBACK_EPOCH_MS, 0, 0)).toBe(FALLBACK_FLOOR);
    expect(decodeFallbackId(FALLBACK_FLOOR - 1n)).toBeUndefined(); // a segment ID
    expect(() => encodeFallbackId(FALLBACK_EPOCH_MS - 1, 0, 0)).toThrow(/outside/);
  });

  it('issues increasing IDs within the grant, borrowing the next millisecond when the sequence is spent and when the clock goes back', () => {
    let now = FALLBACK_EPOCH_MS + 1000;
    const f = new FallbackIssuer(() => now);
    expect(f.next()).toBeUndefined(); // no lease: nothing
    f.setGrant({ workerId: 5, notBeforeMs: now, notAfterMs: now + 3 });
    const ids: bigint[] = [];
    for (let i = 0; i < 2048; i++) ids.push(f.next()!);
    const borrowed = f.next()!; // sequence spent within the millisecond
    expect(decodeFallbackId(borrowed)).toMatchObject({ timestampMs: now + 1, sequence: 0, workerId: 5 });
    now -= 500; // the clock steps back: still after the last one
    const after = f.next()!;
    expect(after > borrowed).toBe(true);
    ids.push(borrowed, after);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });

  it('stops at the end of its grant: nothing at or after notAfterMs, and the next holder starts after it', () => {
    let now = FALLBACK_EPOCH_MS + 10_000;
    const a = new FallbackIssuer(() => now);
    a.setGrant({ workerId: 1, notBeforeMs: now, notAfterMs: now + 2 });
    let n = 0;
    while (a.next() !== undefined) n++;
    expect(n).toBe(2 * 2048); // two milliseconds, then refused
    now += 1_000_000;
    expect(a.next()).toBeUndefined();
    // The next holder of worker id 1 is granted after a's lease: its milliseconds are all later.
    const b = new FallbackIssuer(() => FALLBACK_EPOCH_MS); // even with a clock far behind
    b.setGrant({ workerId: 1, notBeforeMs: a.lastTick + 1, notAfterMs: a.lastTick + 100 });
    expect(decodeFallbackId(b.next()!)!.timestampMs).toBeGreaterThan(a.lastTick);
  });

  it("spans a holding over the milliseconds its lease allowed: to the last renewal's end unless released, never into the previous holder's", () => {
    const ttl = 10_000;
    // Granted at 1000, renewed at 4000, never released (killed in an outage): it could issue until its last lease's margin.
    const live = { workerId: 3, fromTick: 0, untilTick: -1, released: false, firstAtMs: 1000, lastAtMs: 4000 };
    expect(fallbackHoldingSpan(live, ttl)).toEqual({ workerId: 3, fromTick: 0, untilTick: fallbackNotAfterMs(14_000, ttl) - 1 });
    const later = { ...live, firstAtMs: 20_000, lastAtMs: 20_000 };
    expect(fallbackHoldingSpan(later, ttl).fromTick).toBe(19_000);
    // The next holder is granted only after the lease's end (14000): its span starts after the previous span's end.
    const next = { ...live, fromTick: 0, firstAtMs: 14_000, lastAtMs: 14_000 };
    expect(fallbackHoldingSpan(next, ttl).fromTick).toBeGreaterThan(fallbackHoldingSpan(live, ttl).untilTick);
    // Released: it issued nothing after the millisecond it reported.
    expect(fallbackHoldingSpan({ ...later, released: true, untilTick: 20_500, lastAtMs: 21_000 }, ttl)).toEqual({
      workerId: 3,
      fromTick: 19_000,
      untilTick: 20_500,
    });
  });
});
