/**
 * High-water mark stores by name: the state directory (a durable file shared
 * by every process of a server, see state-dir.ts) and an in-memory one.
 */
import type { HighWaterMark } from '../../core/segment/rollback-guard.js';
import type { HighWaterMarkStore } from '../../ports/high-water-mark-store.js';

export { StateDir as FileHighWaterMarkStore } from './state-dir.js';

/** Keeps marks in memory only: for tests and for embedding without a state directory. */
export class MemoryHighWaterMarkStore implements HighWaterMarkStore {
  private readonly marks = new Map<string, HighWaterMark>();
  get(tag: string): HighWaterMark | undefined {
    return this.marks.get(tag);
  }
  put(tag: string, record: HighWaterMark): void {
    this.marks.set(tag, record);
  }
  update(tag: string, change: (current: HighWaterMark | undefined) => HighWaterMark | undefined): HighWaterMark | undefined {
    const current = this.marks.get(tag);
    const next = change(current);
    if (next === undefined || next === current) return current;
    this.marks.set(tag, next);
    return next;
  }
}
