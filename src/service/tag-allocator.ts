/**
 * What a tag's allocator offers its callers (IdService, the routes, bench),
 * whichever mode serves the tag: BufferedTagAllocator (segments, double
 * buffer) or StrictTagAllocator (store writes shared by the requests waiting together).
 */
import type { Id } from '../core/id.js';
import type { Clock } from '../core/clock.js';
import type { Timers } from '../core/timers.js';
import type { SequoiaError } from '../core/errors.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import type { Logger } from '../ports/logger.js';
import type { SegmentStore } from '../ports/segment-store.js';

export interface TagAllocator {
  readonly tag: string;
  /** The next ID: the value itself when one is at hand, or a promise when the store must be asked. */
  next(): Id | Promise<Id>;
  /** An ID only if one is at hand now; never a promise, never an error (nothing is lost when there is none). */
  tryTake(): Id | undefined;
  /** `n` IDs only if all are at hand now; otherwise undefined and nothing is taken. */
  tryTakeMany(n: number): Id[] | undefined;
  /** `n` IDs or an error: never fewer. IDs taken before a failure are dropped (a gap, never a repeat). */
  nextMany(n: number): Id[] | Promise<Id[]>;
  /** Starts a load unless one is in flight; resolves when it ends (it never rejects). */
  load(): Promise<void>;
  /** After an operator's fence: forget the refusal so the next request is tried. */
  resetRefusal(): void;
  /**
   * While refused after a rollback: re-reads the tag's fence epoch from the
   * store (at most once a second) and lifts the refusal when an operator
   * fenced it. Resolves true when it was lifted; never rejects.
   */
  recheckRefusal(): Promise<boolean>;
  /**
   * Stops serving the tag; IDs held and not handed out become a gap. Every
   * request after it, and every one still waiting, is answered `reason`
   * (TAG_NOT_FOUND by default, SHUTTING_DOWN when the server closes), or
   * the rollback refusal already in force.
   */
  close(reason?: SequoiaError): void;
  /** After close(), on a clean shutdown: gives the unused IDs back to the store when it safely can. Never throws. */
  giveBackTail(): Promise<boolean>;
  /**
   * The tag generation (TagInfo.generation) of the IDs it holds, when it
   * holds IDs of one generation it can name; the refresh drops an allocator
   * whose tag was deleted and created again. Optional: a mode that holds
   * nothing between requests has none.
   */
  readonly generation?: string | undefined;
  snapshot(): TagAllocatorSnapshot;
}

export interface TagAllocatorOptions {
  /** Cap for the dynamic step. Default 1,000,000. */
  readonly maxStep: number;
  /** How long a caller waits for an in-flight load when both segments are empty. Default 3000 ms. */
  readonly loadTimeoutMs: number;
  /** First retry delay after a failed load; doubles up to `maxRetryDelayMs`. Default 100 ms. */
  readonly minRetryDelayMs: number;
  /** Default 5000 ms. */
  readonly maxRetryDelayMs: number;
}

export const DEFAULT_ALLOCATOR_OPTIONS: TagAllocatorOptions = {
  maxStep: 1_000_000,
  loadTimeoutMs: 3000,
  minRetryDelayMs: 100,
  maxRetryDelayMs: 5000,
};

export interface TagAllocatorDeps {
  readonly store: SegmentStore;
  readonly marks: HighWaterMarkStore;
  readonly clock: Clock;
  /** Default node's timers (systemTimers). */
  readonly timers?: Timers;
  readonly logger: Logger;
  readonly options: TagAllocatorOptions;
  /** Called after every load attempt (for metrics). */
  readonly onLoad?: (tag: string, ok: boolean, seconds: number) => void;
}

/** A point-in-time view for /v1/status and the monitoring page. */
export interface TagAllocatorSnapshot {
  readonly tag: string;
  readonly current: { readonly start: bigint; readonly end: bigint; readonly next: bigint | undefined } | undefined;
  readonly next: { readonly start: bigint; readonly end: bigint } | undefined;
  readonly remaining: number;
  readonly remainingCurrent: number;
  readonly nextReady: boolean;
  readonly loading: boolean;
  readonly step: number | undefined;
  readonly storedStep: number | undefined;
  readonly lastLoadAt: number | undefined;
  readonly lastLoadMs: number | undefined;
  readonly loads: number;
  readonly loadFailures: number;
  readonly lastError: { readonly code: string; readonly message: string } | undefined;
  readonly refusing: string | undefined;
  /** IDs the current / next segment holds in all (for "how full" bars). */
  readonly currentSize: number;
  readonly nextSize: number;
  /**
   * IDs taken out of this allocator's buffer since it was created: IDs loaded
   * minus IDs still buffered minus IDs dropped (rollback, close). Monotonic for
   * the allocator's life; metrics and rates derive from it at read time, so
   * the hot path counts nothing.
   */
  readonly issued: number;
  /** Distinguishes allocators of the same tag (a tag deleted and created again), so totals can carry over. */
  readonly instance: number;
}

/** What every mode counts the same way; a mode with buffers adds theirs over it. */
export interface SnapshotCounts {
  readonly tag: string;
  readonly instance: number;
  readonly loading: boolean;
  readonly lastLoadAt: number | undefined;
  readonly lastLoadMs: number | undefined;
  readonly loads: number;
  readonly loadFailures: number;
  readonly lastError: SequoiaError | undefined;
  readonly refusing: SequoiaError | undefined;
  readonly issued: number;
}

/** The snapshot of an allocator holding nothing between requests; a buffered one overrides the buffer's fields. */
export function snapshotOf(c: SnapshotCounts): TagAllocatorSnapshot {
  return {
    tag: c.tag,
    current: undefined,
    next: undefined,
    remaining: 0,
    remainingCurrent: 0,
    nextReady: false,
    loading: c.loading,
    step: undefined,
    storedStep: undefined,
    lastLoadAt: c.lastLoadAt,
    lastLoadMs: c.lastLoadMs,
    loads: c.loads,
    loadFailures: c.loadFailures,
    lastError: c.lastError && { code: c.lastError.code, message: c.lastError.message },
    refusing: c.refusing?.code,
    currentSize: 0,
    nextSize: 0,
    issued: c.issued,
    instance: c.instance,
  };
}

let instances = 0;

/** A number no other allocator of this process has (either mode), for `instance`. */
export function newInstance(): number {
  return ++instances;
}
