/**
 * Snowflake IDs as a service: one generator per layout, each on a worker id
 * from the WorkerIdProvider (leased per id space), renewed in the background
 * (the lease's renewal, loss and release: snowflake-lease.ts).
 *
 * The core answers "retry after n ms"; this is where the waiting happens:
 * - sequence exhausted: spin to the next tick (at most one tick, as every
 *   Snowflake does) when it is ≤ 2 ms away, else sleep;
 * - clock behind (policy `wait`): sleep the gap (the core bounds it);
 * - ceiling reached: renew now, storing a higher reserved tick, then go on.
 * A lease that is lost (renewal refused: the id changed hands) revokes the
 * generator at once; the next request leases a fresh id, which starts after
 * that id's last reported tick.
 */
import { ClockError, InvalidArgumentError, SequoiaError, UnavailableError } from '../core/errors.js';
import { type ClockEvent, type ClockPolicy, SnowflakeGenerator, type Wait } from '../core/snowflake/generator.js';
import { DEFAULT_LAYOUT, type Layout, PRESETS, getLayout, idSpaceExhausted, remainingSeconds } from '../core/snowflake/layout.js';
import { type Clock, monotonicMs, systemClock } from '../core/clock.js';
import { delay, systemTimers, type Timers } from '../core/timers.js';
import { silentLogger } from '../core/silent-logger.js';
import type { Logger } from '../ports/logger.js';
import { type Random, systemRandom } from '../core/random.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../ports/worker-id-provider.js';
import type { SnowflakeWorkerReport } from '../ports/metrics.js';
import { type ExplainResult, explainId } from '../core/snowflake/explain.js';
import { type Lineage, type LineageVersion, versionAt } from '../core/snowflake/lineage.js';
import { assertCount, assertShard } from '../core/request-rules.js';
import { LeasedWorker } from './snowflake-lease.js';

export { explainId, type ExplainResult };

export interface SnowflakeServiceOptions {
  readonly provider: WorkerIdProvider;
  /** Layout of `/api/snowflake/get/{tag}` and of requests without `layout`. Default 'twitter'. */
  readonly defaultLayout?: string;
  /** Custom layouts (validated with `defineLayout`), by name, beside the presets. */
  readonly layouts?: ReadonlyMap<string, Layout>;
  /** Default 'wait'. */
  readonly clockPolicy?: ClockPolicy;
  /** Largest clock gap waited out (policy wait), ms. Default 1000. */
  readonly maxWaitMs?: number;
  /** Reserved ids per layout for backup-worker. Default 1 with that policy, else 0. */
  readonly backupWorkers?: number;
  readonly clock?: Clock;
  /** Where the lease renewals and the waits run. Default node's timers (a simulator injects its own). */
  readonly timers?: Timers;
  readonly random?: Random;
  readonly logger?: Logger;
  /** Monotonic ms. Default the clock's monotonic reading (`monotonicMs(clock)`). */
  readonly monotonic?: () => number;
  /** Warn (at start, in the logs) when a layout has less than this left, seconds. Default five years. */
  readonly lifetimeWarningSeconds?: number;
  /**
   * After a layout could not get a worker id, requests are refused at once
   * with that error, and the provider is asked again (in the background) at
   * most this often (monotonic ms), so an exhausted pool is not asked (and a
   * worker-node row not taken) per request. Default 5000.
   */
  readonly acquireRetryMs?: number;
}

/** One row of `report()`: the Metrics port's report, with the layout's lifetime always known. */
export type SnowflakeReport = SnowflakeWorkerReport & { readonly layoutRemainingSeconds: number };

interface Totals {
  backwards: number;
  exhausted: number;
  issued: number;
}

export class SnowflakeService {
  readonly defaultLayout: string;
  readonly clockPolicy: ClockPolicy;
  private readonly provider: WorkerIdProvider;
  private readonly layouts: ReadonlyMap<string, Layout> | undefined;
  private readonly maxWaitMs: number;
  private readonly backupWorkers: number;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly random: Random;
  private readonly logger: Logger;
  private readonly mono: () => number;
  private readonly lifetimeWarning: number;
  private readonly workers = new Map<string, LeasedWorker>();
  private readonly pending = new Map<string, Promise<LeasedWorker>>();
  private readonly retired = new Map<string, Totals>();
  /** A layout whose worker id could not be had: the error, refused until (monotonic ms). */
  private readonly failed = new Map<string, { readonly error: unknown; readonly until: number }>();
  private readonly acquireRetryMs: number;
  private closed = false;

  constructor(o: SnowflakeServiceOptions) {
    this.provider = o.provider;
    this.layouts = o.layouts;
    this.defaultLayout = o.defaultLayout ?? DEFAULT_LAYOUT;
    getLayout(this.defaultLayout, this.layouts);
    this.clockPolicy = o.clockPolicy ?? 'wait';
    this.maxWaitMs = o.maxWaitMs ?? 1000;
    this.backupWorkers = o.backupWorkers ?? (this.clockPolicy === 'backup-worker' ? 1 : 0);
    const clock = (this.clock = o.clock ?? systemClock);
    this.timers = o.timers ?? systemTimers;
    this.random = o.random ?? systemRandom;
    this.logger = o.logger ?? silentLogger;
    this.mono = o.monotonic ?? (() => monotonicMs(clock));
    this.lifetimeWarning = o.lifetimeWarningSeconds ?? 5 * 365 * 86_400;
    this.acquireRetryMs = o.acquireRetryMs ?? 5000;
  }

  get providerKind(): string {
    return this.provider.kind;
  }

  /**
   * Takes the default layout's worker id now. Rejects when none can be had
   * (the server logs it and serves the rest; snowflake requests are refused
   * with the error's code, and the id is asked for again later).
   */
  async start(): Promise<void> {
    await this.checkLineages();
    await this.worker(this.defaultLayout);
  }

  /**
   * Every lineage's changes, checked against the ticks this server recorded
   * (its state dir): a version that issued past the next one's cutover (the
   * lineage was added or moved after the fact, or a layout in it was used by
   * its own name) leaves IDs the next version could reach. Refused with
   * INVALID_ARGUMENT, which stops a server's start: the configuration cannot work.
   */
  async checkLineages(): Promise<void> {
    for (const l of this.layouts?.values() ?? []) {
      if (l.lineage) for (const v of l.lineage.versions.slice(0, -1)) await this.checkVersionTicks(l.name, v);
    }
  }

  private async checkVersionTicks(name: string, v: LineageVersion, granted?: number): Promise<void> {
    const recorded = granted ?? (await this.provider.highestTick?.(spaceOf(v.layout, name)));
    if (recorded === undefined || recorded <= v.lastTick) return;
    const iso = (tick: number) => new Date(v.layout.epochMs + tick * v.layout.unitMs).toISOString();
    throw new InvalidArgumentError(
      `layout ${JSON.stringify(name)}: version ${v.version} (${v.layout.name}) has issued up to ${iso(recorded + 1)} (tick ${recorded}, as recorded ${granted === undefined ? "in this server's state dir" : 'for its worker id'}), past version ${v.version + 1}'s cutover at ${iso(v.lastTick + 1)}: IDs of version ${v.version + 1} would not all be above it; move the cutover after ${iso(recorded + 1)} (IDs issued under ${v.layout.name}'s own name count too)`,
    );
  }

  layout(name?: string): Layout {
    return getLayout(name ?? this.defaultLayout, this.layouts);
  }

  /** Every layout this service issues in: the presets, then the custom ones. */
  knownLayouts(): Layout[] {
    return [...PRESETS.values(), ...(this.layouts?.values() ?? [])];
  }

  /** One ID as a decimal string; synchronous when the generator is ready and no wait is needed. */
  next(layoutName?: string, shard = 0): string | Promise<string> {
    const w = this.workers.get(layoutName ?? this.defaultLayout);
    if (w && !w.lost) {
      try {
        const id = w.generator.take(shard);
        if (typeof id === 'string') return id;
      } catch (e) {
        if (!(e instanceof SequoiaError && e.code === 'LEASE_LOST')) throw e;
      }
    }
    return this.nextSlow(layoutName ?? this.defaultLayout, shard, 1).then((ids) => ids[0] as string);
  }

  /** `count` IDs (1..10000), all or nothing. */
  nextMany(layoutName: string | undefined, count: number, shard = 0): string[] | Promise<string[]> {
    assertCount(count);
    const name = layoutName ?? this.defaultLayout;
    const w = this.workers.get(name);
    if (w && !w.lost) {
      const out: string[] = [];
      try {
        for (let i = 0; i < count; i++) {
          const id = w.generator.take(shard);
          // nextSlow fills `out` up to `count` in all: what was taken here stays part of this one batch.
          if (typeof id !== 'string') return this.nextSlow(name, shard, count, out);
          out.push(id);
        }
        return out;
      } catch (e) {
        if (!(e instanceof SequoiaError && e.code === 'LEASE_LOST')) throw e;
        return this.nextSlow(name, shard, count, out);
      }
    }
    return this.nextSlow(name, shard, count);
  }

  /** Fills `out` until it holds `count` IDs (all of them, or an error and none returned). */
  private async nextSlow(name: string, shard: number, count: number, out: string[] = []): Promise<string[]> {
    const layout = this.layout(name);
    if (layout.shardBits > 0) assertShard(layout, shard);
    const t: SlowTake = { w: await this.worker(name), clockWaited: 0, stalled: 0, waitLogged: 0, renewals: 0 };
    while (out.length < count) {
      if (this.closed) throw shuttingDown();
      // A lineage moved on to its next version while this request waited.
      if (t.w.superseded) t.w = await this.worker(name);
      let id: string | Wait;
      try {
        id = t.w.generator.take(shard);
      } catch (e) {
        if (t.w.superseded) continue;
        await this.afterLeaseLost(e, name, t);
        continue;
      }
      if (typeof id === 'string') {
        t.stalled = 0;
        if (t.clockWaited > t.waitLogged) {
          this.logger.warn(
            { layout: name, waitedMs: t.clockWaited - t.waitLogged, policy: this.clockPolicy },
            'snowflake clock behind the last tick: waited it out',
          );
          t.waitLogged = t.clockWaited;
        }
        out.push(id);
        continue;
      }
      await this.waitOut(id, name, t);
    }
    return out;
  }

  /** `take` threw: a lost lease is renewed once, or leased afresh once it changed hands; anything else stands. */
  private async afterLeaseLost(e: unknown, name: string, t: SlowTake): Promise<void> {
    const w = t.w;
    if (e instanceof SequoiaError && e.code === 'LEASE_LOST' && !w.lost && t.renewals++ < 1) {
      // The deadline passed (a pause, a slow store): one renewal decides. Refused (the id
      // changed hands, w is now lost): the next turn leases a fresh id, as when the
      // background renewal had found it first.
      try {
        await w.renew();
      } catch (re) {
        if (!(re instanceof SequoiaError && re.code === 'LEASE_LOST' && w.lost)) throw re;
      }
      return;
    }
    if (e instanceof SequoiaError && e.code === 'LEASE_LOST' && w.lost && t.renewals++ < 2) {
      t.w = await this.worker(name);
      return;
    }
    throw e;
  }

  /** Waits out what stopped `take`, or refuses when the clock or the lease store does not come. */
  private async waitOut(id: Wait, name: string, t: SlowTake): Promise<void> {
    switch (id.reason) {
      case 'sequence':
        // The next tick is a few ms away: spin for it, once. A clock that did not get there
        // (stopped: frozen by libfaketime, a stalled VM) is waited for with timers, so the
        // event loop turns, and counts as a clock behind: the request is refused after the
        // policy's wait instead of spinning for ever.
        if (id.waitMs <= 2 && t.stalled === 0 && spinUntilTickAfter(t.w.generator, this.mono)) return;
        t.stalled += Math.max(1, id.waitMs);
        if (t.stalled > this.maxWaitMs + 50 + t.w.generator.layout.unitMs) {
          throw new ClockError(`the clock has not moved to the next tick for ${t.stalled} ms`, { retryAfterMs: Math.max(1, id.waitMs) });
        }
        await this.sleep(id.waitMs);
        return;
      case 'clock':
        t.clockWaited += id.waitMs;
        if (t.clockWaited > this.maxWaitMs + 50)
          throw new ClockError(`the clock stayed behind the last tick for ${t.clockWaited} ms`, { retryAfterMs: id.waitMs });
        await this.sleep(id.waitMs);
        return;
      case 'cutover':
        t.w = await this.nextVersion(name, t.w);
        return;
      case 'ceiling':
        if (t.renewals++ > 20)
          throw new UnavailableError('LEASE_LOST', 'could not reserve ticks ahead in the lease store', { retryAfterMs: 1000 });
        await t.w.renew(id.wantTick);
        return;
    }
  }

  /** The generator for a layout, leasing its worker id(s) on first use. */
  async worker(name: string): Promise<LeasedWorker> {
    if (this.closed) throw shuttingDown();
    const w = this.workers.get(name);
    if (w && !w.lost) return w;
    const f = this.failed.get(name);
    if (f) {
      // No worker id could be had: refuse at once (a lease provider may take seconds to say no again);
      // ask again in the background once the retry delay has passed.
      if (this.mono() >= f.until && !this.pending.has(name)) this.startCreate(name).catch(() => {});
      throw f.error;
    }
    return this.pending.get(name) ?? this.startCreate(name);
  }

  /** A lineage past `w`'s version: the worker of the next one (made once, whoever asks first). */
  private nextVersion(name: string, w: LeasedWorker): Promise<LeasedWorker> {
    if (this.workers.get(name) !== w) return this.worker(name);
    // The next version's worker id could not be had: refused at once until the retry delay passes, as for any layout.
    const f = this.failed.get(name);
    if (f && this.mono() < f.until) return Promise.reject(f.error);
    return this.pending.get(name) ?? this.startCreate(name, (w.lineageVersion ?? 0) + 1);
  }

  /** One attempt at the layout's worker id(s); a failure is kept (and refused with) for `acquireRetryMs`. */
  private startCreate(name: string, minVersion = 1): Promise<LeasedWorker> {
    const p = this.create(name, minVersion).finally(() => this.pending.delete(name));
    p.then(
      () => this.failed.delete(name),
      (e: unknown) => {
        if (!this.closed) this.failed.set(name, { error: e, until: this.mono() + this.acquireRetryMs });
      },
    );
    this.pending.set(name, p);
    return p;
  }

  private async create(name: string, minVersion: number): Promise<LeasedWorker> {
    if (this.closed) throw shuttingDown();
    const named = this.layout(name);
    const now = this.clock.now();
    // A lineage issues in the version in force now, or a later one when the previous ran past its last tick.
    const lineage = named.lineage;
    const at = lineage ? versionAt(lineage, now) : undefined;
    const version = lineage && at ? (lineage.versions[Math.max(at.version, minVersion) - 1] ?? at) : undefined;
    const layout = version ? version.layout : named;
    if (remainingSeconds(layout, now) <= 0) {
      throw idSpaceExhausted(layout);
    }
    if (remainingSeconds(layout, now) < this.lifetimeWarning) {
      this.logger.warn(
        { layout: name, endsAt: new Date(layout.endsAtMs).toISOString(), remainingSeconds: Math.floor(remainingSeconds(layout, now)) },
        'snowflake layout runs out of time bits soon; plan a new layout (sequoia plan)',
      );
    }
    const space = spaceOf(layout, name);
    const grants = await this.acquireGrants(name, space, layout, version, lineage);
    const [primary, ...backups] = grants as [WorkerGrant, ...WorkerGrant[]];
    // A lineage version starts at its cutover's tick: below it, its IDs could fall among the previous version's.
    const floor = version ? version.firstTick - 1 : -1;
    const generator = new SnowflakeGenerator({
      layout,
      clock: this.clock,
      random: this.random,
      monotonic: this.mono,
      clockPolicy: layout.shardBits > 0 && this.clockPolicy === 'backup-worker' ? 'wait' : this.clockPolicy,
      maxWaitMs: this.maxWaitMs,
      worker: { workerId: primary.workerId, afterTick: Math.max(primary.afterTick, floor) },
      backups: backups.map((g) => ({ workerId: g.workerId, afterTick: Math.max(g.afterTick, floor) })),
      ...(version ? { lastTick: version.lastTick } : {}),
      ceilingTick: this.provider.leased ? Math.max(...grants.map((g) => g.afterTick)) : Number.POSITIVE_INFINITY,
      validUntil: Math.min(...grants.map((g) => g.validUntil)),
      onClockEvent: (e) => this.logger.warn({ layout: name, ...e }, CLOCK_EVENT_MESSAGES[e.kind]),
    });
    const w = new LeasedWorker(
      layout,
      space,
      generator,
      grants,
      this.provider,
      this.logger,
      (lw) => this.forget(lw),
      { name, lineageVersion: version?.version },
      this.timers,
      this.mono,
    );
    if (this.provider.leased) {
      await w.renew();
      w.renewEvery(Math.max(100, Math.floor((this.provider.ttlMs ?? 10_000) / 3)));
    }
    this.install(name, w, version?.version);
    this.logAcquired(name, w, grants, version?.version);
    return w;
  }

  /**
   * The layout's worker id(s): its own and its backups' (none when sharded), each
   * checked against the lineage's next version; all given back when one fails.
   */
  private async acquireGrants(
    name: string,
    space: IdSpace,
    layout: Layout,
    version: LineageVersion | undefined,
    lineage: Lineage | undefined,
  ): Promise<WorkerGrant[]> {
    const grants: WorkerGrant[] = [];
    try {
      const n = layout.shardBits > 0 ? 1 : 1 + this.backupWorkers;
      for (let i = 0; i < n; i++)
        grants.push(
          await this.provider.acquire(
            space,
            grants.map((g) => g.workerId),
          ),
        );
    } catch (e) {
      await Promise.all(grants.map((g) => this.provider.release(space, g, g.afterTick).catch(() => {})));
      throw e;
    }
    if (version && version.version < (lineage?.versions.length ?? 0)) {
      try {
        for (const g of grants) await this.checkVersionTicks(name, version, g.afterTick);
      } catch (e) {
        await Promise.all(grants.map((g) => this.provider.release(space, g, g.afterTick).catch(() => {})));
        throw e;
      }
    }
    return grants;
  }

  /** `w` becomes the layout's worker; a lineage's previous version gives its worker id back. */
  private install(name: string, w: LeasedWorker, version: number | undefined): void {
    const layout = w.layout;
    const old = this.workers.get(name);
    if (old) this.retire(old);
    this.workers.set(name, w);
    if (old && old.lineageVersion !== undefined && !old.lost) {
      // The previous version's worker id goes back with its last tick (at or before the cutover).
      old.superseded = true;
      void old.close();
      this.logger.info({ layout: name, version, from: old.layout.name, to: layout.name }, 'snowflake lineage switched to its next version');
    }
  }

  /** Logs the grant, and warns when the clock is behind its last recorded tick. */
  private logAcquired(name: string, w: LeasedWorker, grants: WorkerGrant[], version: number | undefined): void {
    const layout = w.layout;
    const [primary, ...backups] = grants as [WorkerGrant, ...WorkerGrant[]];
    const generator = w.generator;
    this.logger.info(
      {
        layout: name,
        ...(version !== undefined ? { version, versionLayout: layout.name } : {}),
        workerId: primary.workerId,
        backups: backups.map((g) => g.workerId),
        afterTick: primary.afterTick,
        provider: this.provider.kind,
      },
      'snowflake worker id acquired',
    );
    const behindMs = (primary.afterTick - generator.currentTick()) * layout.unitMs;
    if (behindMs > 0) {
      // A restart with the clock behind the last recorded tick (a crash, then a clock stepped back): the policy decides.
      this.logger.warn(
        {
          layout: name,
          workerId: primary.workerId,
          afterTick: primary.afterTick,
          behindMs,
          policy: this.clockPolicy,
          maxWaitMs: this.maxWaitMs,
        },
        'snowflake clock is behind the last recorded tick: IDs wait or are refused (CLOCK_MOVED_BACKWARDS) until it catches up',
      );
    }
  }

  /** A lost worker stops counting as the layout's current one; its totals stay in the report. */
  /** At least 1 ms, as node's setTimeout waits: a wait of 0 must still let the clock move. */
  private sleep(ms: number): Promise<void> {
    return delay(this.timers, Math.max(1, ms));
  }

  private forget(w: LeasedWorker): void {
    if (this.workers.get(w.name) === w) {
      this.workers.delete(w.name);
      this.retire(w);
    }
  }

  private retire(w: LeasedWorker): void {
    const s = w.generator.stats();
    const t = this.retired.get(w.name) ?? { backwards: 0, exhausted: 0, issued: 0 };
    t.backwards += s.clockBackwardsTotal;
    t.exhausted += s.sequenceExhaustedTotal;
    t.issued += s.issuedTotal;
    this.retired.set(w.name, t);
  }

  /** Decodes an ID under a layout. */
  explain(idText: string, layoutName?: string): ExplainResult {
    const layout = this.layout(layoutName);
    return explainId(idText, layout);
  }

  /** For metrics (SequoiaMetrics.registerSnowflakeSource): one row per layout in use. Cheap; off the hot path. */
  report(): SnowflakeReport[] {
    const now = this.clock.now();
    return [...this.workers.values()].map((w) => {
      const s = w.generator.stats();
      const t = this.retired.get(w.name) ?? { backwards: 0, exhausted: 0, issued: 0 };
      const exp = w.grants.map((g) => g.expiresAtMs).filter((x): x is number => x !== undefined);
      const ttl = w.grants.map((g) => g.leaseMs).filter((x): x is number => x !== undefined);
      return {
        generator: w.layout.name,
        workerId: s.workerId,
        lastTick: s.lastTick,
        clockBackwardsTotal: t.backwards + s.clockBackwardsTotal,
        sequenceExhaustedTotal: t.exhausted + s.sequenceExhaustedTotal,
        issuedTotal: t.issued + s.issuedTotal,
        leaseExpiresAtMs: exp.length ? Math.min(...exp) : undefined,
        leaseTtlMs: ttl.length ? Math.min(...ttl) : undefined,
        layoutRemainingSeconds: remainingSeconds(w.layout, now),
      };
    });
  }

  /** Stops issuing and gives every worker id back with its last issued tick. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.pending.values()]);
    const ws = [...this.workers.values()];
    this.workers.clear();
    await Promise.all(ws.map((w) => w.close()));
    await this.provider.close();
  }
}

/** The id space a layout's worker ids are leased in (`label`: the name it is used under). */
function spaceOf(layout: Layout, label: string): IdSpace {
  return { key: layout.spaceKey, workerCount: 2 ** layout.workerBits, unitMs: layout.unitMs, epochMs: layout.epochMs, label };
}

const CLOCK_EVENT_MESSAGES: Record<ClockEvent['kind'], string> = {
  backwards: 'snowflake clock moved backwards behind the last tick',
  borrow: 'snowflake clock behind: issuing on borrowed future ticks (policy logical)',
  'backup-switch': 'snowflake clock behind: switched to a backup worker id (policy backup-worker)',
};

function shuttingDown(): UnavailableError {
  return new UnavailableError('SHUTTING_DOWN', 'the snowflake service is closed: the server is shutting down', { retryAfterMs: 1000 });
}

/**
 * Busy-waits (≤ 3 ms) until the clock reads a tick after the generator's
 * last; false when it did not. Also bounded in turns: a simulated clock does
 * not move while this runs, and must not hold it for ever.
 */
function spinUntilTickAfter(g: SnowflakeGenerator, mono: () => number): boolean {
  const until = mono() + 3;
  const last = g.lastIssuedTick;
  for (let turns = 0; g.currentTick() <= last; turns++) {
    if (turns >= SPIN_TURNS_MAX || mono() >= until) return false;
  }
  return true;
}

/** Far more turns than 3 ms of the real clock take; reached only by a clock that does not move. */
const SPIN_TURNS_MAX = 1_000_000;

/** What one slow request has been through: its worker, the waits behind it, its renewals. */
interface SlowTake {
  w: LeasedWorker;
  clockWaited: number;
  /** ms waited for a next tick that did not come (reset by every ID issued). */
  stalled: number;
  waitLogged: number;
  renewals: number;
}
