import { describe, expect, it } from 'vitest';
import { ForeignIds, RangeCover } from './audit-analysis.js';

const range = (first: number, last: number, stride = 1) => ({ first: BigInt(first), last: BigInt(last), stride });

/** Feeds sorted IDs to a sweep as the audit's sorter does (halves, count 1). */
function foreignOf(cover: RangeCover, ids: number[]): string[] {
  const f = new ForeignIds(cover.ranges());
  for (const id of ids) f.add(Math.floor(id / 2 ** 32), id % 2 ** 32, 1);
  return f.examples;
}

describe('RangeCover: the ledger held as coalesced ranges', () => {
  it('holds one range for 100,000 contiguous rows arriving page by page, a page in any order', () => {
    const cover = new RangeCover();
    const rows = Array.from({ length: 100_000 }, (_, i) => range(1 + 10 * i, 10 + 10 * i));
    // Reversed pages (the worst order a page can come in) on the first 20,000 rows; the rest in order.
    const reversed = 20_000;
    for (let p = 0; p < reversed; p += 5000) for (const r of rows.slice(p, p + 5000).reverse()) cover.add(r);
    for (const r of rows.slice(reversed)) cover.add(r);
    expect(cover.rows).toBe(100_000);
    expect(cover.ranges()).toEqual([range(1, 1_000_000)]);
    // Within a reversed page the rows wait apart until the page's first row joins them: never more than a page.
    expect(cover.peakHeld).toBeLessThanOrEqual(5000);
    const inOrder = new RangeCover();
    for (const r of rows) inOrder.add(r);
    expect(inOrder.peakHeld).toBe(1);
  });

  it("keeps a multi-store set's members apart (one range per stride and residue) and merges overlaps", () => {
    const cover = new RangeCover();
    for (let u = 0; u < 1000; u++) for (let m = 0; m < 3; m++) cover.add(range(3 * 10 * u + m, 3 * (10 * u + 9) + m, 3));
    // A fence's jump overlapping allocations.
    cover.add(range(30_000, 30_002));
    cover.add(range(30_001, 30_100));
    expect(cover.peakHeld).toBeLessThanOrEqual(4);
    expect(cover.ranges()).toEqual([range(0, 29_997, 3), range(1, 29_998, 3), range(2, 29_999, 3), range(30_000, 30_100)]);
  });

  it('keeps holes as holes: the IDs in them are foreign', () => {
    const cover = new RangeCover();
    cover.add(range(21, 30));
    cover.add(range(1, 10));
    cover.add(range(41, 50));
    cover.add(range(11, 20));
    expect(cover.ranges()).toEqual([range(1, 30), range(41, 50)]);
    expect(foreignOf(cover, [1, 15, 30, 31, 40, 41, 50, 51])).toEqual(['31', '40', '51']);
    // Two members of a set of 2: member 1 missing a row.
    const set = new RangeCover();
    set.add(range(0, 18, 2));
    set.add(range(1, 9, 2));
    set.add(range(21, 29, 2));
    expect(foreignOf(set, [2, 9, 11, 19, 21])).toEqual(['11', '19']);
  });
});
