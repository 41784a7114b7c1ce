import { describe, expect, it } from 'vitest';
import { KEPT_RANGES, acceptedRanges, checkAnswer, checkShared, tripStands, withoutRange } from './rollback-guard.js';

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
    // worker A sent at mark 100; worker B's later answer [200, 300) raised the mark to 300 meanwhile
    const raised = {
      mark: 300n,
      ranges: [
        [0n, 100n],
        [200n, 300n],
      ] as const,
    };
    expect(checkShared({ mark: 100n }, raised, 100n, 200n, 0)).toEqual({ ok: true, record: { mark: 300n } });
  });

  it('trips below the floor and keeps the highest mark', () => {
    const v = checkShared({ mark: 200n }, { mark: 300n }, 150n, 250n, 2);
    expect(v).toMatchObject({ ok: false, record: { mark: 300n, trippedAtEpoch: 2 } });
  });

  it('refuses while any process recorded a trip at this epoch or later; a fenced (newer) epoch clears it', () => {
    const tripped = { mark: 300n, trippedAtEpoch: 2 };
    expect(checkShared({ mark: 0n }, tripped, 400n, 500n, 2).ok).toBe(false);
    expect(checkShared({ mark: 0n }, tripped, 400n, 500n, 3)).toEqual({
      ok: true,
      record: {
        mark: 500n,
        ranges: [
          [0n, 300n],
          [400n, 500n],
        ],
      },
    });
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
    expect(checkShared(trip, trip, 500n, 600n, 1, undefined, 'B')).toEqual({
      ok: true,
      record: {
        mark: 600n,
        ranges: [
          [0n, 200n],
          [500n, 600n],
        ],
      },
    });
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

describe('checkShared: the ranges the server accepted', () => {
  it('refuses an answer over a range another process accepted, though the floor read before it was sent is below it (sim seed 17)', () => {
    // worker A's [100, 200) recorded after worker B read its floor (100); the store failed over and answers B [100, 200) again
    const v = checkShared({ mark: 100n }, { mark: 200n, ranges: [[100n, 200n]] }, 100n, 200n, 0, 'state dir ./d');
    expect(v).toMatchObject({ ok: false, record: { mark: 200n, trippedAtEpoch: 0, ranges: [[100n, 200n]] } });
    expect(v.ok ? '' : v.reason).toContain('over [100, 200), IDs accepted here before (kept in state dir ./d)');
    expect(v.ok ? '' : v.publicReason).not.toContain('./d');
  });

  it('records each part of a batch, not their hull: another process may answer between them', () => {
    const v = checkShared(undefined, undefined, 10n, 40n, 0, undefined, undefined, [
      [10n, 20n],
      [30n, 40n],
    ]);
    expect(v).toEqual({
      ok: true,
      record: {
        mark: 40n,
        ranges: [
          [10n, 20n],
          [30n, 40n],
        ],
      },
    });
    expect(checkShared({ mark: 20n }, v.record, 20n, 30n, 0)).toEqual({ ok: true, record: { mark: 40n, ranges: [[10n, 40n]] } });
    // parts that overlap each other are a repeat too
    const twice = checkShared(undefined, undefined, 10n, 20n, 0, undefined, undefined, [
      [10n, 20n],
      [15n, 20n],
    ]);
    expect(twice.ok).toBe(false);
  });

  it('keeps at most KEPT_RANGES ranges, the lowest forgotten: below them the floor judges (sim seeds 151, 282)', () => {
    let rec = checkShared(undefined, undefined, 0n, 1n, 0).record;
    const n = BigInt(KEPT_RANGES) + 5n;
    for (let i = 1n; i <= n; i++) rec = checkShared(undefined, rec, 2n * i, 2n * i + 1n, 0).record;
    const kept = acceptedRanges(rec);
    expect(kept).toHaveLength(KEPT_RANGES);
    expect(kept[0]).toEqual([2n * (n - BigInt(KEPT_RANGES) + 1n), 2n * (n - BigInt(KEPT_RANGES) + 1n) + 1n]);
    expect(kept[KEPT_RANGES - 1]).toEqual([2n * n, 2n * n + 1n]);
    // a request sent before the other workers' 37 ranges (its floor: 1), answered late in a gap between them
    expect(checkShared({ mark: 1n }, rec, 3n, 4n, 0).ok).toBe(true);
    // below the floor read before sending it is a rollback, as before ranges were kept
    expect(checkShared({ mark: 40n }, rec, 3n, 4n, 0).ok).toBe(false);
    // over a range kept, whatever the floor
    expect(checkShared({ mark: 1n }, rec, 2n * n, 2n * n + 1n, 0).ok).toBe(false);
  });

  it('a give-back takes only its own range out: the ranges of others stay, the mark is the highest left (sim seed 30)', () => {
    const rec = {
      mark: 300n,
      ranges: [
        [0n, 100n],
        [200n, 300n],
      ] as const,
    };
    expect(withoutRange(rec, 200n, 300n)).toEqual({ mark: 100n });
    expect(withoutRange(rec, 50n, 100n)).toEqual({
      mark: 300n,
      ranges: [
        [0n, 50n],
        [200n, 300n],
      ],
    });
    // a record of an earlier version: everything below its mark, less the range given back
    expect(withoutRange({ mark: 300n }, 250n, 300n)).toEqual({ mark: 250n });
    expect(withoutRange({ mark: 300n }, 100n, 200n)).toEqual({
      mark: 300n,
      ranges: [
        [0n, 100n],
        [200n, 300n],
      ],
    });
    expect(withoutRange({ mark: 100n }, 0n, 100n)).toEqual({ mark: 0n });
  });

  it('ranges that do not end at the mark (an earlier version moved the mark since) count as everything below it', () => {
    expect(acceptedRanges({ mark: 500n, ranges: [[100n, 200n]] })).toEqual([[0n, 500n]]);
    expect(acceptedRanges({ mark: 200n, ranges: [[100n, 200n]] })).toEqual([[100n, 200n]]);
    expect(acceptedRanges({ mark: 0n })).toEqual([]);
  });
});
