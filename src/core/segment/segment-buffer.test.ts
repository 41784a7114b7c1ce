import { describe, expect, it } from 'vitest';
import { MAX_ID } from '../id.js';
import { type Segment, SegmentBuffer } from './segment-buffer.js';

function seg(start: bigint, end: bigint, stride = 1): Segment {
  return { start, end, stride, step: Number(end - start), loadedAt: 0 };
}

describe('SegmentBuffer', () => {
  it('hands out [start, end) in order, then nothing', () => {
    const b = new SegmentBuffer();
    expect(b.take()).toBeUndefined();
    b.offer(seg(10n, 13n));
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([10, 11, 12, undefined]);
  });

  it('asks for a refill exactly when more than 10% is used, and only once', () => {
    const b = new SegmentBuffer();
    let calls = 0;
    b.onRefillNeeded = () => calls++;
    b.offer(seg(0n, 100n));
    for (let i = 0; i < 10; i++) b.take();
    expect(calls).toBe(0); // 10 of 100 used: not more than 10%
    b.take();
    expect(calls).toBe(1); // 11 used
    for (let i = 0; i < 80; i++) b.take();
    expect(calls).toBe(1);
  });

  it('rearm lets a failed refill be asked again, and a ready next segment silences it', () => {
    const b = new SegmentBuffer();
    let calls = 0;
    b.onRefillNeeded = () => calls++;
    b.offer(seg(0n, 100n));
    for (let i = 0; i < 11; i++) b.take();
    b.rearm();
    b.take();
    expect(calls).toBe(2);
    b.offer(seg(100n, 200n));
    b.rearm();
    b.take();
    expect(calls).toBe(2);
  });

  it('swaps to the next segment when the current is used up and fires for the new one', () => {
    const b = new SegmentBuffer();
    let calls = 0;
    b.onRefillNeeded = () => calls++;
    b.offer(seg(0n, 10n));
    b.offer(seg(50n, 60n));
    const got = Array.from({ length: 20 }, () => b.take());
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]);
    expect(b.take()).toBeUndefined();
    expect(calls).toBe(1); // the second segment's threshold; the first had next ready
  });

  it('refuses a second next segment rather than dropping IDs', () => {
    const b = new SegmentBuffer();
    b.offer(seg(0n, 10n));
    b.offer(seg(10n, 20n));
    expect(() => b.offer(seg(20n, 30n))).toThrow(/already loaded/);
  });

  it('returns numbers up to 2^53-1 and bigints from 2^53 on, exactly', () => {
    const b = new SegmentBuffer();
    const two53 = 2n ** 53n;
    b.offer(seg(two53 - 2n, two53 + 2n));
    const got = [b.take(), b.take(), b.take(), b.take()];
    expect(got).toEqual([Number(two53 - 2n), Number(two53 - 1n), two53, two53 + 1n]);
    expect(got.map((v) => typeof v)).toEqual(['number', 'number', 'bigint', 'bigint']);
  });

  it('is exact up to 2^63-1', () => {
    const b = new SegmentBuffer();
    b.offer(seg(MAX_ID - 3n, MAX_ID));
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([MAX_ID - 3n, MAX_ID - 2n, MAX_ID - 1n, undefined]);
    const out: (number | bigint)[] = [];
    b.offer(seg(MAX_ID - 1n, MAX_ID));
    expect(b.takeInto(5, out)).toBe(1);
    expect(out).toEqual([MAX_ID - 1n]);
  });

  it('takeInto spans both segments and reports a shortfall', () => {
    const b = new SegmentBuffer();
    b.offer(seg(0n, 3n));
    b.offer(seg(7n, 9n));
    const out: (number | bigint)[] = [];
    expect(b.takeInto(10, out)).toBe(5);
    expect(out).toEqual([0, 1, 2, 7, 8]);
    expect(b.remaining()).toBe(0);
  });

  it('honours a stride (multi-store segments)', () => {
    const b = new SegmentBuffer();
    b.offer(seg(2n, 14n, 3));
    const out: (number | bigint)[] = [];
    b.takeInto(10, out);
    expect(out).toEqual([2, 5, 8, 11]);
  });

  it('counts what is left and clears everything', () => {
    const b = new SegmentBuffer();
    b.offer(seg(0n, 10n));
    b.offer(seg(10n, 15n));
    b.take();
    expect(b.remainingCurrent()).toBe(9);
    expect(b.remaining()).toBe(14);
    expect(b.peekCurrent()).toBe(1n);
    b.clear();
    expect(b.take()).toBeUndefined();
    expect(b.remaining()).toBe(0);
  });
});
