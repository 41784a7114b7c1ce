/**
 * IdService: the segment-mode registry. Tags are loaded lazily on first use;
 * the store's tag list (read at start and on every refresh) makes the known
 * tags, served without any cap. Any other tag is looked up in the store before
 * TAG_NOT_FOUND (so a tag created while servers run is served at once), with a
 * short negative cache and a global cap on such look-ups so random names
 * cannot flood the store. Past the cap the answer is RATE_LIMITED, never
 * TAG_NOT_FOUND (the tag may exist), and the tag list is re-read so tags made
 * elsewhere become known. The HTTP layer adds a per-client share of look-ups
 * (client-gate.ts). A periodic refresh drops tags deleted elsewhere, and
 * tags deleted and created again (their generation changed).
 */
import { InvalidArgumentError, located, SequoiaError, TagNotFoundError, UnavailableError } from '../core/errors.js';
import type { Id } from '../core/id.js';
import { assertIdValue, assertStep, assertTag, TAG_PATTERN } from '../core/validate.js';
import { MULTI_META_TAG } from '../core/segment/multi-meta-tag.js';
import { type Clock, monotonicMs, systemClock } from '../core/clock.js';
import { systemTimers, type Timer, type Timers } from '../core/timers.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import { silentLogger } from '../core/silent-logger.js';
import type { Logger } from '../ports/logger.js';
import type { NewTag, SegmentStore, TagInfo, TagUpdate } from '../ports/segment-store.js';
import { DEFAULT_ALLOCATOR_OPTIONS, type TagAllocator, type TagAllocatorOptions, type TagAllocatorSnapshot } from './tag-allocator.js';
import { BufferedTagAllocator } from './buffered-tag-allocator.js';
import { StrictTagAllocator } from './strict-tag-allocator.js';
import { nameHistory, type TagNameHistory } from './tag-history.js';

export interface IdServiceOptions {
  readonly store: SegmentStore;
  readonly marks: HighWaterMarkStore;
  readonly clock?: Clock;
  /** Where the refresh, retry and wait timers run. Default node's timers (a simulator injects its own). */
  readonly timers?: Timers;
  readonly logger?: Logger;
  readonly allocator?: Partial<TagAllocatorOptions>;
  /** How often the tag list is re-read from the store. Default 60,000 ms; 0 disables. */
  readonly refreshIntervalMs?: number;
  /** How long "no such tag" is remembered. Default 1000 ms. */
  readonly negativeCacheMs?: number;
  /** Store look-ups of unknown tags allowed per second, over all tags. Default 50. */
  readonly unknownTagLookupsPerSecond?: number;
  readonly onLoad?: (tag: string, ok: boolean, seconds: number) => void;
  /**
   * Tags served strictly increasing across all servers: no buffer; concurrent
   * requests share one atomic store write per batch (see strict-tag-allocator.ts). Default none.
   */
  readonly strictTags?: Iterable<string>;
  /** On close(), give the unused tail of each tag's last range back to the store (compare-and-set). Default true. */
  readonly giveBackOnClose?: boolean;
}

const NEGATIVE_CACHE_MAX = 10_000;

/** A new tag as callers give it: `start` may be a bigint, a safe integer or a decimal string. */
export interface CreateTagInput extends Omit<NewTag, 'start'> {
  readonly start?: bigint | number | string | undefined;
}

export class IdService {
  readonly store: SegmentStore;
  private readonly marks: HighWaterMarkStore;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly allocatorOptions: TagAllocatorOptions;
  private readonly refreshIntervalMs: number;
  private readonly negativeCacheMs: number;
  private readonly lookupsPerSecond: number;
  private readonly onLoad: IdServiceOptions['onLoad'];
  private readonly strictTags: ReadonlySet<string>;
  private readonly giveBackOnClose: boolean;
  private readonly allocators = new Map<string, TagAllocator>();
  private readonly resolving = new Map<string, Promise<TagAllocator>>();
  private readonly missing = new Map<string, number>();
  /** Tags of the store's list (last read) and those created or loaded here. */
  private known = new Set<string>();
  private listing: Promise<void> | undefined;
  private lastListAt = -Infinity;
  private lookupWindowStart = Number.NEGATIVE_INFINITY;
  private lookupsInWindow = 0;
  private refreshTimer: Timer | undefined;
  private started = false;
  /** Wall-clock ms the service was made, and its monotonic reading then (for uptime). */
  readonly startedAt: number;
  private readonly startedMono: number;

  constructor(options: IdServiceOptions) {
    this.store = options.store;
    this.marks = options.marks;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger;
    this.allocatorOptions = { ...DEFAULT_ALLOCATOR_OPTIONS, ...options.allocator };
    this.refreshIntervalMs = options.refreshIntervalMs ?? 60_000;
    this.negativeCacheMs = options.negativeCacheMs ?? 1000;
    this.lookupsPerSecond = options.unknownTagLookupsPerSecond ?? 50;
    this.onLoad = options.onLoad;
    this.strictTags = new Set(options.strictTags ?? []);
    this.giveBackOnClose = options.giveBackOnClose ?? true;
    this.startedAt = this.clock.now();
    this.startedMono = monotonicMs(this.clock);
  }

  /** Milliseconds since the service was made, on the monotonic clock. */
  uptimeMs(): number {
    return monotonicMs(this.clock) - this.startedMono;
  }

  async start(): Promise<void> {
    if (this.started) return;
    try {
      await this.store.init();
      // A state dir shared with a server of another store would take that store's marks for a rollback.
      if (this.store.location !== undefined) await this.marks.bindStore?.(this.store.location, false);
      const multiStoreSet = (this.store.stride ?? 1) > 1;
      if (!multiStoreSet && (await this.store.getTag(MULTI_META_TAG))) {
        // Its counters are units of a multi-store set, not IDs: serving them alone would repeat.
        throw new InvalidArgumentError(
          `store: this ${this.store.kind} store is a member of a multi-store set; configure the whole comma-separated list`,
        );
      }
      if (this.strictTags.size > 0 && multiStoreSet) {
        throw new InvalidArgumentError(
          'strictTags: a multi-store set cannot order IDs across its stores; serve strict tags from one store',
        );
      }
    } catch (e) {
      // A client that keeps reconnecting in the background would keep the process alive after the failed start.
      await this.store.close().catch(() => {});
      throw e;
    }
    this.started = true;
    await this.refresh();
    if (this.refreshIntervalMs > 0) {
      this.refreshTimer = this.timers
        .every(this.refreshIntervalMs, () => {
          this.refresh().catch((e: unknown) => this.logger.warn({ err: String(e) }, 'tag refresh failed'));
        })
        .unref();
    }
  }

  /** The next ID of `tag`: the value itself on the hot path, a promise when the store must be asked. */
  next(tag: string): Id | Promise<Id> {
    const a = this.allocators.get(tag);
    return a ? a.next() : this.resolve(tag).then((x) => x.next());
  }

  /**
   * The allocator of one tag, for hot loops: its `next()` skips the tag
   * look-up. Dropped (and failing with TAG_NOT_FOUND) if the tag is deleted.
   *
   * @example
   * const order = await service.allocator('order');
   * const id = await order.next();
   */
  allocator(tag: string): Promise<TagAllocator> {
    const a = this.allocators.get(tag);
    return a ? Promise.resolve(a) : this.resolve(tag);
  }

  /** An ID of `tag` only if a buffer already holds one (the HTTP fast path); undefined otherwise, nothing lost. */
  takeBuffered(tag: string): Id | undefined {
    return this.allocators.get(tag)?.tryTake();
  }

  /** `count` IDs of `tag` only if the buffers hold them all now; undefined otherwise, nothing taken. */
  takeBufferedMany(tag: string, count: number): Id[] | undefined {
    return this.allocators.get(tag)?.tryTakeMany(count);
  }

  /** `count` IDs of `tag`, or an error: all or nothing. */
  nextMany(tag: string, count: number): Id[] | Promise<Id[]> {
    const a = this.allocators.get(tag);
    return a ? a.nextMany(count) : this.resolve(tag).then((x) => x.nextMany(count));
  }

  /** Re-reads the tag list: its tags are known, allocators of tags gone from the store are dropped. */
  refresh(): Promise<void> {
    this.listing ??= (async () => {
      try {
        this.lastListAt = monotonicMs(this.clock);
        const tags = await this.store.listTags();
        const present = new Map(tags.map((t) => [t.tag, t]));
        for (const [tag, a] of this.allocators) {
          const listed = present.get(tag);
          // Gone, or deleted and created again since its IDs were taken: what it holds belongs to the deleted tag.
          if (!listed || (a.generation !== undefined && a.generation !== listed.generation)) this.drop(tag, a);
        }
        for (const t of tags) this.missing.delete(t.tag);
        this.known = new Set(present.keys());
      } finally {
        this.listing = undefined;
      }
    })();
    return this.listing;
  }

  /** Whether `tag` is served or on the store's tag list (as last read): its look-up takes no share of any cap. */
  isKnown(tag: string): boolean {
    return this.allocators.has(tag) || this.known.has(tag);
  }

  /**
   * Creates a tag. An existing tag is TAG_EXISTS, or with `ifExists: 'ok'`
   * answered as it is (its step and IDs untouched), so start-up code can run
   * on every start.
   */
  async createTag(input: CreateTagInput, options: { ifExists?: 'error' | 'ok' } = {}): Promise<TagInfo> {
    const tag = assertTag(input.tag);
    const step = input.step === undefined ? undefined : assertStep(input.step);
    const start = input.start === undefined ? undefined : assertIdValue(input.start, 'start');
    const description = input.description === undefined ? undefined : assertDescription(input.description);
    const ifExists = options.ifExists ?? 'error';
    if (ifExists !== 'error' && ifExists !== 'ok') throw new InvalidArgumentError("ifExists must be 'error' or 'ok'");
    let info: TagInfo;
    try {
      info = await this.store.createTag({ tag, step, start, description });
    } catch (e) {
      if (ifExists === 'ok' && e instanceof SequoiaError && e.code === 'TAG_EXISTS') return this.getTag(tag);
      throw e;
    }
    this.missing.delete(tag);
    this.known.add(tag);
    this.logger.info({ tag, step: info.step, start: String(info.maxId) }, 'tag created');
    return info;
  }

  /** `createTag(input, { ifExists: 'ok' })`: the tag, created if it was missing. */
  ensureTag(input: CreateTagInput): Promise<TagInfo> {
    return this.createTag(input, { ifExists: 'ok' });
  }

  async getTag(tag: string): Promise<TagInfo> {
    const info = await this.store.getTag(assertTag(tag));
    if (!info) throw new TagNotFoundError(tag);
    return info;
  }

  /**
   * What the store knows of the IDs handed out under a tag name, across its
   * deletes and re-creations: max(max_id, the range ledger's highest range
   * end) is where the name may start again without repeating them.
   * `deletedMaxId`: the max_id of a creation just deleted (its row is gone,
   * its ledger rows are not).
   */
  async tagHistory(tag: string, deletedMaxId = 0n): Promise<TagNameHistory> {
    assertTag(tag);
    const current = await this.store.getTag(tag);
    const ledgerTop = this.store.ledgerTop?.bind(this.store);
    const top = ledgerTop ? await ledgerTop(tag) : undefined;
    const maxId = current && current.maxId > deletedMaxId ? current.maxId : deletedMaxId;
    return nameHistory(tag, current, maxId, ledgerTop !== undefined, top);
  }

  async listTags(): Promise<TagInfo[]> {
    return (await this.store.listTags()).filter((t) => TAG_PATTERN.test(t.tag));
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    assertTag(tag);
    const step = update.step === undefined ? undefined : assertStep(update.step);
    const description = update.description === undefined ? undefined : assertDescription(update.description);
    if (step === undefined && description === undefined) {
      throw new InvalidArgumentError('give at least one of step, description');
    }
    const info = await this.store.updateTag(tag, { step, description });
    this.logger.info({ tag, step: info.step }, 'tag updated');
    return info;
  }

  async deleteTag(tag: string): Promise<void> {
    assertTag(tag);
    await this.store.deleteTag(tag);
    this.known.delete(tag);
    const a = this.allocators.get(tag);
    if (a) this.drop(tag, a);
    this.logger.info({ tag }, 'tag deleted');
  }

  /**
   * Raises the store's max_id to `to` and accepts the store's state again on
   * this server. Refuses a bound below what this server itself handed out.
   */
  async fence(tag: string, toValue: unknown): Promise<TagInfo> {
    assertTag(tag);
    const to = assertIdValue(toValue, 'to');
    const mark = await this.marks.get(tag);
    if (mark && to < mark.mark) {
      const say = (w: string | undefined) =>
        `to must be at least ${mark.mark}: IDs up to ${mark.mark - 1n} were handed out (high-water mark ${mark.mark}${w === undefined ? '' : ` in ${w}`})`;
      const where = this.marks.where;
      if (where === undefined) throw new InvalidArgumentError(say('this process'));
      const { message, located: split } = located(say, where);
      throw new InvalidArgumentError(message, { located: split });
    }
    const info = await this.store.fence(tag, to);
    // Lifts the trip for every process of this server; the mark stays (another process may have raised it meanwhile).
    await this.marks.update(tag, (cur) => ({ mark: cur ? cur.mark : 0n }));
    this.allocators.get(tag)?.resetRefusal();
    this.logger.warn({ tag, to: String(to), maxId: String(info.maxId), fenceEpoch: info.fenceEpoch }, 'tag fenced');
    return info;
  }

  /** Resolves when the store answers. */
  ping(): Promise<void> {
    return this.store.ping();
  }

  /**
   * What a request would do for a tag that cannot issue now, done without
   * one: a server kept out of rotation by its readiness (/readyz) gets no
   * requests, yet must notice when it can issue again. A tag refused after a
   * rollback re-reads its fence epoch (at most once a second), and a tag left
   * empty by a failed load (store or state directory failing) loads again.
   * Resolves when those attempts end; never rejects.
   */
  retryFailedTags(): Promise<void> {
    const attempts: Promise<unknown>[] = [];
    for (const a of this.allocators.values()) {
      const s = a.snapshot();
      if (s.refusing !== undefined) attempts.push(a.recheckRefusal());
      else if (s.remaining === 0 && s.lastError !== undefined) attempts.push(a.load());
    }
    return Promise.allSettled(attempts).then(() => undefined);
  }

  snapshot(): TagAllocatorSnapshot[] {
    return [...this.allocators.values()].map((a) => a.snapshot());
  }

  /** Stops serving every tag, gives unused tails back (unless disabled), closes the store. */
  async close(): Promise<void> {
    this.refreshTimer?.clear();
    const closed = [...this.allocators.values()];
    // Requests still waiting on a tag are told to retry elsewhere, not that the tag is gone.
    const shuttingDown = new UnavailableError('SHUTTING_DOWN', 'the server is shutting down; retry', { retryAfterMs: 1000 });
    for (const [tag, a] of this.allocators) this.drop(tag, a, shuttingDown);
    if (this.giveBackOnClose) await Promise.all(closed.map((a) => a.giveBackTail()));
    await this.store.close();
  }

  /** Whether `tag` is served in strict mode. */
  isStrict(tag: string): boolean {
    return this.strictTags.has(tag);
  }

  private drop(tag: string, a: TagAllocator, reason?: SequoiaError): void {
    a.close(reason);
    this.allocators.delete(tag);
  }

  private resolve(tag: string): Promise<TagAllocator> {
    const pending = this.resolving.get(tag);
    if (pending) return pending;
    const p = this.lookUp(tag).finally(() => this.resolving.delete(tag));
    this.resolving.set(tag, p);
    return p;
  }

  private async lookUp(tag: string): Promise<TagAllocator> {
    if (!this.started) throw new InvalidArgumentError('the service is not started');
    assertTag(tag);
    // Intervals (negative cache, look-up window) on the monotonic clock: a stepped wall clock must not stretch them.
    const now = monotonicMs(this.clock);
    if (!this.known.has(tag)) {
      const missAt = this.missing.get(tag);
      if (missAt !== undefined && now - missAt < this.negativeCacheMs) throw new TagNotFoundError(tag);
      if (now - this.lookupWindowStart >= 1000) {
        this.lookupWindowStart = now;
        this.lookupsInWindow = 0;
      }
      if (++this.lookupsInWindow > this.lookupsPerSecond) {
        // The tag may exist (made elsewhere since the last list): re-read the list, at most once a second.
        if (now - this.lastListAt >= 1000) {
          this.refresh().catch((e: unknown) => this.logger.warn({ err: String(e) }, 'tag refresh failed'));
        }
        throw new SequoiaError('RATE_LIMITED', 'too many look-ups of unknown tags on this server; retry in 1 s', {
          retryAfterMs: Math.max(1, 1000 - (now - this.lookupWindowStart)),
        });
      }
    }
    const info = await this.store.getTag(tag);
    if (!info) {
      this.known.delete(tag);
      if (this.missing.size >= NEGATIVE_CACHE_MAX) this.missing.clear();
      this.missing.set(tag, now);
      throw new TagNotFoundError(tag);
    }
    this.known.add(tag);
    const existing = this.allocators.get(tag);
    if (existing) return existing;
    const a = new (this.strictTags.has(tag) ? StrictTagAllocator : BufferedTagAllocator)(tag, {
      store: this.store,
      marks: this.marks,
      clock: this.clock,
      timers: this.timers,
      logger: this.logger,
      options: this.allocatorOptions,
      onLoad: this.onLoad,
    });
    this.allocators.set(tag, a);
    return a;
  }
}

function assertDescription(d: unknown): string {
  if (typeof d !== 'string' || d.length > 1024) throw new InvalidArgumentError('description must be a string of at most 1024 characters');
  return d;
}
