import type { HighWaterMark } from '../core/segment/rollback-guard.js';

/**
 * Local, durable memory of the highest range end each tag has handed out.
 * `put` must be durable when it returns: IDs are handed out only after it.
 */
export interface HighWaterMarkStore {
  get(tag: string): HighWaterMark | undefined;
  put(tag: string, record: HighWaterMark): void;
  /** Where the marks are kept, for messages (`state dir ./data`). */
  readonly where?: string;
}
