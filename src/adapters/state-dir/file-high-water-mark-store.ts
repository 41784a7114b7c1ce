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
