import { describe, expect, it } from 'vitest';
import { checkAnswer, checkShared, tripStands } from './rollback-guard.js';

describe('checkAnswer', () => {
  it('accepts the first answer and raises the mark', () => {
    expect(checkAnswer(undefined, 0n, 100n, 0)).toEqual({ ok: true, record: { mark: 100n } });
    expect(checkAnswer({ mark: 100n }, 100n, 200n, 0)).toEqual({ ok: true, record: { mark: 200n } });
  });

  it('trips on an answer that starts below the mark and stays tripped for the same epoch', () => {
    const v = checkAnswer({ mark: 200n }, 150n, 250n, 3);
    expect(v.ok).toBe(false);
    expect(v.record).toEqual({ mark: 200n, trippedAtEpoch: 3 });
    // even a later, higher answer is refused until the store is fenced
    expect(checkAnswer(v.record, 500n, 600n, 3).ok).toBe(false);
  });

  it('accepts again after a fence (newer epoch) when the answer clears the mark', () => {
    const tripped = { mark: 200n, trippedAtEpoch: 3 };
    expect(checkAnswer(tripped, 1000n, 1100n, 4)).toEqual({ ok: true, record: { mark: 1100n } });
    expect(checkAnswer(tripped, 100n, 150n, 4).ok).toBe(false);
  });
});

describe('checkShared (one set of marks for all processes of a server)', () => {
  it('judges an answer by the mark read before its request was sent, not by marks other processes raised since', () => {
    // worker A sent at mark 100; worker B's later answer raised the mark to 300 meanwhile
    expect(checkShared({ mark: 100n }, { mark: 300n }, 100n, 200n, 0)).toEqual({ ok: true, record: { mark: 300n } });
  });

  it('trips below the floor and keeps the highest mark', () => {
    const v = checkShared({ mark: 200n }, { mark: 300n }, 150n, 250n, 2);
    expect(v).toMatchObject({ ok: false, record: { mark: 300n, trippedAtEpoch: 2 } });
  });

  it('refuses while any process recorded a trip at this epoch or later; a fenced (newer) epoch clears it', () => {
    const tripped = { mark: 300n, trippedAtEpoch: 2 };
    expect(checkShared({ mark: 0n }, tripped, 400n, 500n, 2).ok).toBe(false);
    expect(checkShared({ mark: 0n }, tripped, 400n, 500n, 3)).toEqual({ ok: true, record: { mark: 500n } });
  });

  it('a mark lowered since the floor was read (another process gave its tail back) judges the answer instead', () => {
    // read at mark 300 (A's range [200, 300)); A stopped, handed out up to 250, gave [250, 300) back: mark and store at 250
    expect(checkShared({ mark: 300n }, { mark: 250n }, 250n, 260n, 0)).toEqual({ ok: true, record: { mark: 260n } });
    // a store restored below what was handed out is still a rollback
    expect(checkShared({ mark: 300n }, { mark: 250n }, 240n, 250n, 0)).toMatchObject({
      ok: false,
      record: { mark: 250n, trippedAtEpoch: 0 },
    });
  });
});

describe('a trip and the creation of the tag it was recorded under', () => {
  it('records the creation of the answer that tripped', () => {
    expect(checkAnswer({ mark: 200n }, 150n, 250n, 3, undefined, 'A').record).toEqual({
      mark: 200n,
      trippedAtEpoch: 3,
      trippedGeneration: 'A',
    });
    const shared = checkShared({ mark: 200n }, { mark: 300n }, 150n, 250n, 3, undefined, 'A');
    expect(shared.record).toEqual({ mark: 300n, trippedAtEpoch: 3, trippedGeneration: 'A' });
  });

  it('stands for its own creation until a fence epoch above its own', () => {
    const trip = { mark: 200n, trippedAtEpoch: 2, trippedGeneration: 'A' };
    expect(tripStands(trip, 2, 'A')).toBe(true);
    expect(tripStands(trip, 3, 'A')).toBe(false);
    expect(checkShared(trip, trip, 500n, 600n, 2, undefined, 'A').ok).toBe(false);
  });

  it('stands for a later creation until its first fence (its epochs start at 0 again)', () => {
    const trip = { mark: 200n, trippedAtEpoch: 2, trippedGeneration: 'A' };
    expect(tripStands(trip, 0, 'B')).toBe(true);
    expect(checkShared(trip, trip, 500n, 600n, 0, undefined, 'B').ok).toBe(false);
    expect(tripStands(trip, 1, 'B')).toBe(false);
    // lifted, the answer is judged by the mark: above it, served and the trip cleared; below it, tripped again for B
    expect(checkShared(trip, trip, 500n, 600n, 1, undefined, 'B')).toEqual({ ok: true, record: { mark: 600n } });
    const again = checkShared(trip, trip, 100n, 110n, 1, undefined, 'B');
    expect(again).toMatchObject({ ok: false, record: { mark: 200n, trippedAtEpoch: 1, trippedGeneration: 'B' } });
  });

  it('without a recorded creation (an earlier version), or none given, compares fence epochs alone', () => {
    const old = { mark: 200n, trippedAtEpoch: 2 };
    expect(tripStands(old, 1, 'B')).toBe(true);
    expect(tripStands(old, 3, 'B')).toBe(false);
    expect(tripStands({ ...old, trippedGeneration: 'A' }, 1)).toBe(true);
    expect(checkShared(old, old, 500n, 600n, 1, undefined, 'B').ok).toBe(false);
    expect(tripStands({ mark: 200n }, 0, 'B')).toBe(false);
  });
});
