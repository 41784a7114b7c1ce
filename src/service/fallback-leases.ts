/**
 * The server side of the fallback space (issue 22 §2, docs/operations.md
 * "Fallback space"): for the tags that declare one, clients lease a fallback
 * worker id while servers answer, and the tag's segment IDs are held below
 * 2^62 so that they never reach the fallback IDs.
 */
import { InvalidArgumentError, SequoiaError, UnavailableError } from '../core/errors.js';
import {
  FALLBACK_EPOCH_MS,
  FALLBACK_FLOOR,
  FALLBACK_SEQUENCE_BITS,
  FALLBACK_TIME_BITS,
  FALLBACK_WORKER_BITS,
  FALLBACK_WORKERS,
  fallbackLeaseSpace,
  fallbackNotAfterMs,
} from '../core/fallback/fallback-space.js';
import { type Random, systemRandom } from '../core/random.js';
import { UuidV4Generator } from '../core/uuid/uuid-v4.js';
import type { LeaseRecord, WorkerLeaseStore } from '../ports/worker-lease-store.js';
import type { SegmentStore } from '../ports/segment-store.js';

/** What a client is answered: its worker id and the milliseconds (store clock) it may issue in. */
export interface FallbackLease {
  readonly tag: string;
  readonly owner: string;
  readonly workerId: number;
  readonly generation: number;
  /** The store's clock when the lease was granted or renewed: the client aligns its clock on it. */
  readonly grantedAtMs: number;
  readonly expiresAtMs: number;
  /** First millisecond the holder may issue: after every millisecond the previous holder of the id could have issued. */
  readonly notBeforeMs: number;
  /** The holder issues only below this: the lease's end less a tenth of it, for clock drift and the request's round trip. */
  readonly notAfterMs: number;
  readonly layout: {
    readonly floor: string;
    readonly epochMs: number;
    readonly timeBits: number;
    readonly workerBits: number;
    readonly sequenceBits: number;
  };
}

export interface LeaseRequest {
  /** With workerId and generation: renew this lease (a fresh one is taken when it changed hands). */
  readonly owner?: string | undefined;
  readonly workerId?: number | undefined;
  readonly generation?: number | undefined;
  /** The last millisecond the holder issued (-1: none). */
  readonly lastTick?: number | undefined;
}

const LAYOUT = {
  floor: FALLBACK_FLOOR.toString(),
  epochMs: FALLBACK_EPOCH_MS,
  timeBits: FALLBACK_TIME_BITS,
  workerBits: FALLBACK_WORKER_BITS,
  sequenceBits: FALLBACK_SEQUENCE_BITS,
} as const;

export class FallbackLeases {
  private readonly tags: ReadonlySet<string>;
  /** Makes each owner unique (a client that restarts with the same name is another holder). */
  private readonly owners: UuidV4Generator;

  constructor(
    private readonly o: {
      readonly tags: readonly string[];
      readonly ttlMs: number;
      /** The store's lease table; undefined when the store cannot hold leases (the route then refuses). */
      readonly leases: () => WorkerLeaseStore | undefined;
      /** Default the system CSPRNG (a simulator injects a seeded one). */
      readonly random?: Random;
    },
  ) {
    this.tags = new Set(o.tags);
    this.owners = new UuidV4Generator({ random: o.random ?? systemRandom, poolSize: 256 });
  }

  enabled(tag: string): boolean {
    return this.tags.has(tag);
  }

  /** Takes or renews a fallback worker id of `tag` for the caller; `who` names the client in the owner. */
  async lease(tag: string, req: LeaseRequest, who: string): Promise<FallbackLease> {
    const store = this.store(tag);
    const space = fallbackLeaseSpace(tag);
    const lastTick = req.lastTick ?? -1;
    if (req.owner !== undefined && req.workerId !== undefined && req.generation !== undefined) {
      const r = await store.renew({ space, workerId: req.workerId, owner: req.owner, generation: req.generation }, this.o.ttlMs, lastTick);
      if (r !== undefined) return this.answer(tag, req.owner, r, -1);
      // Changed hands (the holder was away past its lease): a fresh id below.
    }
    const owner = `${who.slice(0, 100)}/${this.owners.next()}`;
    const r = await store.acquire({ space, owner, ttlMs: this.o.ttlMs, workerCount: FALLBACK_WORKERS });
    if ('refused' in r)
      throw new UnavailableError('LEASE_LOST', `no fallback worker id of tag ${JSON.stringify(tag)} is free: ${r.refused}`, {
        retryAfterMs: this.o.ttlMs,
      });
    return this.answer(tag, owner, r, r.lastTick);
  }

  /** The holder stops (client close): the id is free at once, after the last millisecond it issued. */
  async release(tag: string, req: LeaseRequest): Promise<void> {
    if (req.owner === undefined || req.workerId === undefined || req.generation === undefined) {
      throw new InvalidArgumentError('release needs owner, workerId and generation');
    }
    await this.store(tag).release(
      { space: fallbackLeaseSpace(tag), workerId: req.workerId, owner: req.owner, generation: req.generation },
      req.lastTick ?? -1,
    );
  }

  private store(tag: string): WorkerLeaseStore {
    if (!this.tags.has(tag))
      throw new SequoiaError('NOT_FOUND', `tag ${JSON.stringify(tag)} has no fallback space (server option fallback-tags)`);
    const store = this.o.leases();
    if (store === undefined)
      throw new SequoiaError('NOT_FOUND', 'this store cannot hold fallback leases: use PostgreSQL, MySQL, SQLite or Redis');
    return store;
  }

  private answer(tag: string, owner: string, r: LeaseRecord, previousLastTick: number): FallbackLease {
    const grantedAtMs = r.expiresAtMs - this.o.ttlMs;
    return {
      tag,
      owner,
      workerId: r.workerId,
      generation: r.generation,
      grantedAtMs,
      expiresAtMs: r.expiresAtMs,
      // A fresh lease is granted only once the previous one has ended, so grantedAtMs is already past every
      // millisecond its holder could issue; the previous holder's reported last tick covers a clock ahead of ours.
      notBeforeMs: Math.max(grantedAtMs, previousLastTick + 1),
      notAfterMs: fallbackNotAfterMs(r.expiresAtMs, this.o.ttlMs),
      layout: LAYOUT,
    };
  }
}

/**
 * The segment store of a server whose tags in `tags` have a fallback space:
 * those tags are never allocated a range reaching 2^62 (the first fallback ID),
 * nor created to start there. Refused with ID_SPACE_EXHAUSTED naming the cause.
 */
export function withFallbackCeiling(store: SegmentStore, tags: readonly string[]): SegmentStore {
  if (tags.length === 0) return store;
  const fallback = new Set(tags);
  const allocate: SegmentStore['allocate'] = async (tag, step) => {
    const a = await store.allocate(tag, step);
    // The range is [maxId - step × stride, maxId): its IDs are below maxId.
    if (fallback.has(tag) && a.maxId > FALLBACK_FLOOR) {
      throw new UnavailableError(
        'ID_SPACE_EXHAUSTED',
        `tag ${JSON.stringify(tag)} has a fallback space from 2^62 (fallback-tags): its segment IDs stop below 2^62 and this range would pass it`,
      );
    }
    return a;
  };
  const createTag: SegmentStore['createTag'] = async (t) => {
    if (fallback.has(t.tag) && t.start !== undefined && t.start >= FALLBACK_FLOOR) {
      throw new InvalidArgumentError(
        `start: tag ${JSON.stringify(t.tag)} has a fallback space from 2^62 (fallback-tags); its segment IDs must start below it`,
      );
    }
    return store.createTag(t);
  };
  return new Proxy(store, {
    get(target, p) {
      if (p === 'allocate') return allocate;
      if (p === 'createTag') return createTag;
      const v: unknown = Reflect.get(target, p, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
