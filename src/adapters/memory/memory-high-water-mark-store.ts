/**
 * A high-water mark store with no disk: marks last as long as the process. The
 * durable one is the state directory (adapters/state-dir/state-dir.ts).
 */
import type { HighWaterMark } from '../../core/segment/rollback-guard.js';
import type { HighWaterMarkStore } from '../../ports/high-water-mark-store.js';

/** Keeps marks in memory only: for tests and for embedding without a state directory. */
export class MemoryHighWaterMarkStore implements HighWaterMarkStore {
  private readonly marks = new Map<string, HighWaterMark>();
  async get(tag: string): Promise<HighWaterMark | undefined> {
    return this.marks.get(tag);
  }
  async put(tag: string, record: HighWaterMark): Promise<void> {
    this.marks.set(tag, record);
  }
  async update(tag: string, change: (current: HighWaterMark | undefined) => HighWaterMark | undefined): Promise<HighWaterMark | undefined> {
    const current = this.marks.get(tag);
    const next = change(current);
    if (next === undefined || next === current) return current;
    this.marks.set(tag, next);
    return next;
  }
}
