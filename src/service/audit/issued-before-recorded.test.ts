import { describe, expect, it } from 'vitest';
import { IssuedBeforeRecorded, LedgerReach, type RecordedRange } from './audit-analysis.js';

const range = (first: number, last: number, atMs: number, stride = 1): RecordedRange => ({
  first: BigInt(first),
  last: BigInt(last),
  stride,
  atMs,
});

describe('IssuedBeforeRecorded: rows older than the range that holds their ID', () => {
  it('flags a row older than its range by more than the margin, not one within it', () => {
    const check = new IssuedBeforeRecorded([range(1, 100, 10_000), range(101, 300, 20_000)], 1000);
    check.add(50n, 10_500); // after its range: fine
    check.add(150n, 19_500); // 500 ms before: within the margin (clock skew)
    check.add(151n, 18_999); // 1,001 ms before: issued before its range was recorded
    check.add(999n, 0); // in no range: foreign, not this check's business
    expect(check.checked).toBe(4);
    expect(check.count).toBe(1);
    expect(check.examples[0]).toMatch(/^151: row of 1970-01-01T00:00:18\.999Z, range \[101, 300\] recorded at 1970-01-01T00:00:20\.000Z$/);
  });

  it('judges by the newest range that holds the ID (a restore re-recorded it), whatever the order the rows come in', () => {
    // [1, 1000] recorded at 1,000; restored; the same IDs taken again at 50,000 as [501, 900].
    const check = new IssuedBeforeRecorded([range(501, 900, 50_000), range(1, 1000, 1000)], 0);
    for (const [id, t] of [
      [600n, 2000],
      [100n, 2000],
      [950n, 2000],
      [700n, 60_000],
    ] as const)
      check.add(id, t);
    expect(check.count).toBe(1);
    expect(check.examples[0]).toMatch(/^600: /);
  });

  it("keeps a multi-store set's members apart (stride and residue)", () => {
    const check = new IssuedBeforeRecorded([range(1, 199, 1000, 2), range(2, 200, 90_000, 2)], 0);
    check.add(51n, 2000); // member 0's range, recorded before the row
    check.add(52n, 2000); // member 1's range, recorded after the row
    expect(check.count).toBe(1);
    expect(check.examples[0]).toMatch(/^52: /);
  });

  it('reaches back past short ranges to a long one that holds the ID', () => {
    const check = new IssuedBeforeRecorded([range(1, 10_000, 90_000), range(5, 6, 1), range(7, 8, 1)], 0);
    check.add(9000n, 2000);
    expect(check.count).toBe(1);
  });
});

describe('LedgerReach', () => {
  it('keeps the largest allocated range (in IDs of the space) and the highest end of allocations and fences', () => {
    const reach = new LedgerReach();
    reach.add({ kind: 'allocate', first: 1n, last: 100n, stride: 1 });
    reach.add({ kind: 'allocate', first: 101n, last: 6500n, stride: 1 });
    reach.add({ kind: 'fence', first: 6501n, last: 90_000n, stride: 1 });
    reach.add({ kind: 'give-back', first: 1n, last: 10n ** 12n, stride: 1 });
    reach.add({ kind: 'allocate', first: 2n, last: 400n, stride: 2 });
    expect(reach.largestRange).toBe(6400n);
    expect(reach.top).toBe(90_000n);
  });
});
