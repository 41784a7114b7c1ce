/**
 * The `sql-lease` worker-id provider (also `static` and `k8s-ordinal` when a
 * store is configured: a fixed id registered like a lease, so a second process
 * with the same id is refused at start).
 *
 * Fencing: a grant's `validUntil` is measured on this process's monotonic
 * clock from the moment the acquire/renew request was SENT, minus a margin,
 * so it ends before the store-side expiry (set when the request ARRIVED). A
 * holder paused past its lease (GC, SIGSTOP, VM freeze) finds its deadline
 * gone when it wakes and issues nothing; its renewal then fails because the
 * generation changed hands. The lease row's last_tick is the highest tick the
 * holder may issue until its next renewal (a reservation), so the next holder
 * starts strictly after it.
 *
 * The store writes each grant, renewal and release to its lease ledger; this
 * provider names the holder (host, pid, instance, version) and its clock's
 * tick at the grant, and prunes the ledger past its retention in small
 * batches after a renewal has answered, never inside one.
 */
import { hostname } from 'node:os';
import { type Clock, monotonicMs, systemClock } from '../../core/clock.js';
import { bytesToHex } from '../../core/codecs/hex.js';
import { UnavailableError } from '../../core/errors.js';
import { type Random, randomUnit, systemRandom } from '../../core/random.js';
import { delay, systemTimers, type Timers } from '../../core/timers.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';
import type { LeaseHolder } from '../../ports/lease-ledger.js';
import type { WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { PRUNE_BATCH, holderOf } from '../kit/lease/lease-ledger-rules.js';

export interface LeaseWorkerIdProviderOptions {
  /** Lease length, ms. Default 10000. */
  readonly ttlMs?: number;
  /** A fixed id (static, k8s-ordinal); default: any free id. */
  readonly fixedWorkerId?: number;
  /** How long `acquire` keeps trying while ids are held (a crashed holder's lease must run out). Default ttl + 1 s. */
  readonly acquireWaitMs?: number;
  /** Default `${hostname}/${pid}/${random}`. */
  readonly owner?: string;
  /** Default the clock's monotonic reading. */
  readonly monotonic?: () => number;
  readonly kind?: string;
  /** Sequoia's version, for the ledger's holder. */
  readonly version?: string;
  /** Ledger rows older than this go (store clock). Default 90 days; 0 keeps them. */
  readonly ledgerRetentionMs?: number;
  /** Wall clock, ms (the holder's tick at a grant). Default the clock's `now`. */
  readonly now?: () => number;
  /** Default systemClock; `monotonic` and `now` above take precedence over it. */
  readonly clock?: Clock;
  /** Where the waits between acquire attempts run. Default node's timers. */
  readonly timers?: Timers;
  /** For the owner's random part and the first prune's spread. Default the system CSPRNG. */
  readonly random?: Random;
}

const DAY_MS = 86_400_000;
/** Between two prunes: the ledger grows by a few rows a second at most, so hourly batches keep up. */
const PRUNE_EVERY_MS = 3_600_000;

/** The tick of `space` at wall-clock `ms` (undefined without the space's epoch). */
function tickAt(space: IdSpace, ms: number): number | undefined {
  return space.epochMs === undefined ? undefined : Math.floor((ms - space.epochMs) / space.unitMs);
}

/**
 * Prunes the ledger in batches until a batch comes back short, one statement
 * at a time; errors are dropped (the next prune tries again).
 */
async function pruneAll(store: WorkerLeaseStore, retentionMs: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await store.pruneLedger(retentionMs, PRUNE_BATCH)) < PRUNE_BATCH) return;
  }
}

export function defaultOwner(random: Random = systemRandom): string {
  const b = new Uint8Array(4);
  random.fill(b);
  return `${hostname()}/${process.pid}/${bytesToHex(b)}`;
}

export class LeaseWorkerIdProvider implements WorkerIdProvider {
  readonly kind: string;
  readonly leased = true;
  readonly ttlMs: number;
  readonly owner: string;
  private readonly fixed: number | undefined;
  private readonly acquireWaitMs: number;
  private readonly margin: number;
  private readonly mono: () => number;
  private initialised: Promise<void> | undefined;
  private readonly holder: LeaseHolder;
  private readonly retentionMs: number;
  private readonly wall: () => number;
  private readonly timers: Timers;
  private nextPruneAt: number;
  private pruning: Promise<void> | undefined;

  constructor(
    private readonly store: WorkerLeaseStore,
    o: LeaseWorkerIdProviderOptions = {},
  ) {
    this.ttlMs = o.ttlMs ?? 10_000;
    if (!Number.isSafeInteger(this.ttlMs) || this.ttlMs < 300) throw new RangeError('lease ttl must be an integer of at least 300 ms');
    this.fixed = o.fixedWorkerId;
    this.acquireWaitMs = o.acquireWaitMs ?? this.ttlMs + 1000;
    // Room for clock-rate drift between this host and the store, and for the timer firing late.
    this.margin = Math.min(2000, Math.max(50, Math.floor(this.ttlMs / 5)));
    const clock = o.clock ?? systemClock;
    const random = o.random ?? systemRandom;
    this.mono = o.monotonic ?? (() => monotonicMs(clock));
    this.timers = o.timers ?? systemTimers;
    this.owner = o.owner ?? defaultOwner(random);
    this.kind = o.kind ?? `sql-lease(${store.kind})`;
    this.holder = { ...holderOf(this.owner, undefined), version: o.version ?? '' };
    this.retentionMs = o.ledgerRetentionMs ?? 90 * DAY_MS;
    this.wall = o.now ?? (() => clock.now());
    // The first prune comes after the first renewal: a fleet started together spreads over the first minute.
    this.nextPruneAt = this.mono() + randomUnit(random) * 60_000;
  }

  async acquire(space: IdSpace, exclude: readonly number[] = []): Promise<WorkerGrant> {
    this.initialised ??= this.store.init();
    await this.initialised;
    const until = this.mono() + this.acquireWaitMs;
    if (this.fixed !== undefined && (this.fixed < 0 || this.fixed >= space.workerCount)) {
      throw new UnavailableError(
        'LEASE_LOST',
        `worker id ${this.fixed} is outside layout ${space.label}'s range 0..${space.workerCount - 1}`,
      );
    }
    for (;;) {
      const t0 = this.mono();
      const wall0 = this.wall();
      const r = await this.store.acquire({
        space: space.key,
        owner: this.owner,
        ttlMs: this.ttlMs,
        workerCount: space.workerCount,
        want: this.fixed,
        exclude,
        nowTick: tickAt(space, wall0),
        holder: this.holder,
      });
      if (!('refused' in r)) {
        return {
          workerId: r.workerId,
          generation: r.generation,
          afterTick: r.lastTick,
          validUntil: t0 + this.ttlMs - this.margin,
          expiresAtMs: wall0 + this.ttlMs,
          leaseMs: this.ttlMs,
        };
      }
      if (this.mono() >= until)
        throw new UnavailableError('LEASE_LOST', `cannot lease a worker id for layout ${space.label}: ${r.refused}`, {
          retryAfterMs: this.ttlMs,
        });
      await delay(this.timers, Math.min(500, this.ttlMs / 4));
    }
  }

  async renew(space: IdSpace, grant: WorkerGrant, ceilingTick: number): Promise<WorkerGrant> {
    const t0 = this.mono();
    const wall0 = this.wall();
    const r = await this.store.renew(
      { space: space.key, workerId: grant.workerId, owner: this.owner, generation: grant.generation },
      this.ttlMs,
      ceilingTick,
    );
    if (!r) {
      throw new UnavailableError(
        'LEASE_LOST',
        `the lease on worker id ${grant.workerId} (layout ${space.label}) passed to another holder`,
        { retryAfterMs: 1000 },
      );
    }
    this.pruneSoon();
    return { ...grant, validUntil: t0 + this.ttlMs - this.margin, expiresAtMs: wall0 + this.ttlMs, leaseMs: this.ttlMs };
  }

  async release(space: IdSpace, grant: WorkerGrant, lastTick: number): Promise<void> {
    await this.store.release({ space: space.key, workerId: grant.workerId, owner: this.owner, generation: grant.generation }, lastTick);
  }

  async close(): Promise<void> {
    await this.pruning;
    await this.store.close();
  }

  /** Starts a prune when one is due; the renewal that called it does not wait for it. */
  private pruneSoon(): void {
    if (this.retentionMs <= 0 || this.pruning || this.mono() < this.nextPruneAt) return;
    this.nextPruneAt = this.mono() + PRUNE_EVERY_MS;
    this.pruning = pruneAll(this.store, this.retentionMs)
      .catch(() => {})
      .finally(() => {
        this.pruning = undefined;
      });
  }
}

/**
 * `worker-node` (uid-generator style): a new row, hence a new id, at every
 * start; never reused, so never leased. The store claims the id in the lease
 * table for good, so `lease` servers on the same store never choose it.
 */
export class WorkerNodeWorkerIdProvider implements WorkerIdProvider {
  readonly kind = 'worker-node';
  readonly leased = false;
  readonly ttlMs = undefined;
  private initialised: Promise<void> | undefined;

  constructor(
    private readonly store: WorkerLeaseStore,
    private readonly host = defaultOwner(),
  ) {}

  async acquire(space: IdSpace): Promise<WorkerGrant> {
    this.initialised ??= this.store.init();
    await this.initialised;
    const claim = await this.store.registerNode(space.key, this.host, space.workerCount);
    if (claim.workerId >= space.workerCount) {
      throw new UnavailableError(
        'ID_SPACE_EXHAUSTED',
        `worker-node id ${claim.workerId} is beyond layout ${space.label}'s ${space.workerCount} worker ids; worker-node never reuses ids`,
      );
    }
    // An id whose lease ran out was used: start after its holder's last tick.
    return { workerId: claim.workerId, generation: 1, afterTick: claim.lastTick, validUntil: Number.POSITIVE_INFINITY };
  }

  async renew(_space: IdSpace, grant: WorkerGrant): Promise<WorkerGrant> {
    return grant;
  }

  async release(): Promise<void> {}

  async close(): Promise<void> {
    await this.store.close();
  }
}
