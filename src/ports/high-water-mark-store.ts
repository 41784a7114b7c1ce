import type { AcceptedRange, GuardVerdict, HighWaterMark } from '../core/segment/rollback-guard.js';

/**
 * Durable memory of the ranges each tag has handed out and the highest end, one set
 * per server: every process of the server reads and writes the same marks.
 * Writes are durable when they resolve: IDs are handed out only after them.
 */
export interface HighWaterMarkStore {
  get(tag: string): Promise<HighWaterMark | undefined>;
  /** Unconditional write (set-up and tests); servers change marks with `update`. */
  put(tag: string, record: HighWaterMark): Promise<void>;
  /**
   * Atomic read-modify-write, also against other processes sharing the
   * store: `change` sees the current record and returns the new one (or
   * `current` / undefined to leave it). Resolves with the record stored
   * afterwards, once it is durable. Asynchronous: a durable store waits on
   * locks and fsyncs off the event loop (DESIGN.md invariant 6).
   */
  update(tag: string, change: (current: HighWaterMark | undefined) => HighWaterMark | undefined): Promise<HighWaterMark | undefined>;
  /**
   * The rollback guard's check of an answered range [start, end) at fence
   * epoch `fenceEpoch` of tag creation `generation` (`parts`: the answers whose hull it is) against the
   * ranges recorded and `floor` (the mark as read before the request was
   * sent), and the record of its verdict, as one `update` run where the marks
   * are kept (`checkShared` in `core/segment/rollback-guard.ts`). Optional: the
   * guard does the same through `update` without it. A store in a worker
   * thread offers it so that its transaction never calls back to the event
   * loop's thread, i.e. never waits for that loop's turn while it holds the
   * write lock.
   */
  admitRange?(
    tag: string,
    floor: HighWaterMark | undefined,
    start: bigint,
    end: bigint,
    fenceEpoch: number,
    generation?: string,
    parts?: readonly AcceptedRange[],
  ): Promise<GuardVerdict>;
  /** Where the marks are kept, for messages (`state dir ./data`). */
  readonly where?: string;
  /**
   * Refuses (INVALID_ARGUMENT) marks that belong to another store than
   * `location` (SegmentStore.location); `bind` also binds unbound marks to it.
   */
  bindStore?(location: string, bind: boolean): Promise<void>;
}
