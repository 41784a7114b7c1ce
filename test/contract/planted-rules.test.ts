/**
 * A store that skips a shared rule must fail the contract: a planted store
 * that takes any fence bound and start (as the SQLite and memory stores did
 * before the range check guarded them) is caught by the contract's
 * range-check case, while the real store passes it.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ID } from '../../src/core/id.js';
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import type { NewTag, SegmentStore, TagInfo } from '../../src/ports/segment-store.js';
import { expectStoredIdRangeChecked } from './segment-store-contract.js';

/** Test-only: the memory store with its range check skipped (a bound out of range is clamped instead of refused). */
class UncheckedStore extends MemorySegmentStore {
  override fence(tag: string, to: bigint): Promise<TagInfo> {
    return super.fence(tag, to < 0n ? 0n : to > MAX_ID ? MAX_ID : to);
  }
  override createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? 1n;
    return super.createTag({ ...t, start: start < 0n ? 0n : start > MAX_ID ? MAX_ID : start });
  }
}

describe('the contract catches a store without the stored-ID range check', () => {
  it('the planted store fails the range-check case', async () => {
    const planted: SegmentStore = new UncheckedStore();
    await expect(expectStoredIdRangeChecked(planted, `planted-${process.pid}`)).rejects.toThrow(/INVALID_ARGUMENT/);
  });

  it('the real store passes it', async () => {
    await expectStoredIdRangeChecked(new MemorySegmentStore(), `real-${process.pid}`);
  });
});
