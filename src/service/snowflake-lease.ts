/**
 * One layout's Snowflake generator on leased worker ids, and the lease's life:
 * renewal (one at a time, reserving ticks ahead so that a restart starts after
 * every tick this worker may issue), loss (a refused renewal: the id changed
 * hands, so the generator is revoked at once) and release with the last tick.
 */
import { monotonicMs, systemClock } from '../core/clock.js';
import { SequoiaError, UnavailableError } from '../core/errors.js';
import { systemTimers, type Timer, type Timers } from '../core/timers.js';
import type { SnowflakeGenerator } from '../core/snowflake/generator.js';
import type { Layout } from '../core/snowflake/layout.js';
import type { Logger } from '../ports/logger.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../ports/worker-id-provider.js';

const RENEWAL_WARN_EVERY_MS = 5000;

export class LeasedWorker {
  grants: WorkerGrant[];
  lost = false;
  /** A lineage's later version has taken over: requests holding this worker move on. */
  superseded = false;
  /** The name requests use (the layout's, or its lineage's). */
  readonly name: string;
  /** The lineage version this worker issues in; undefined outside a lineage. */
  readonly lineageVersion: number | undefined;
  private timer: Timer | undefined;
  private renewing: Promise<void> | undefined;
  /**
   * close() has begun: nothing more is reserved. A renewal waiting behind the
   * one in flight would otherwise run after the release (the revoked
   * generator's ceiling no longer rises) and raise the recorded tick again,
   * so the next holder of the id starts ahead of the clock.
   */
  private closing = false;
  /** Renewal failures are logged once per RENEWAL_WARN_EVERY_MS, with how many failed since: requests renew on demand, many a second. */
  private lastWarnAt = Number.NEGATIVE_INFINITY;
  private failedSinceWarn = 0;

  constructor(
    readonly layout: Layout,
    readonly space: IdSpace,
    readonly generator: SnowflakeGenerator,
    grants: WorkerGrant[],
    private readonly provider: WorkerIdProvider,
    private readonly logger: Logger,
    /** Told once when the lease is lost, before the loss is logged. */
    private readonly onLost: (w: LeasedWorker) => void,
    as: { readonly name?: string; readonly lineageVersion?: number | undefined } = {},
    private readonly timers: Timers = systemTimers,
    /** Monotonic ms, for spacing the renewal warnings. */
    private readonly monotonic: () => number = () => monotonicMs(systemClock),
  ) {
    this.grants = grants;
    this.name = as.name ?? layout.name;
    this.lineageVersion = as.lineageVersion;
  }

  /** Renews in the background every `everyMs` (failures are logged by `renew`). */
  renewEvery(everyMs: number): void {
    this.timer = this.timers
      .every(everyMs, () => {
        void this.renew().catch(() => {});
      })
      .unref();
  }

  /** Renews every grant, reserving ticks up to `wantTick` at least. One renewal at a time. */
  renew(wantTick = 0): Promise<void> {
    if (this.lost) return Promise.reject(this.lostError());
    if (this.closing) return Promise.resolve();
    if (this.renewing) {
      return this.renewing.then(() => (wantTick > this.generator.ceilingTick ? this.renew(wantTick) : undefined));
    }
    const ttl = this.provider.ttlMs ?? 10_000;
    const aheadTicks = Math.max(1, Math.ceil((2 * ttl) / 3 / this.layout.unitMs));
    const base = Math.max(this.generator.lastIssuedTick, this.generator.currentTick(), wantTick);
    // Never past the generator's last tick: a lineage version's reservation stays before the next cutover.
    const ceiling = Math.min(base + aheadTicks, this.generator.lastAllowedTick);
    this.renewing = (async () => {
      try {
        const renewed = await Promise.all(this.grants.map((g) => this.provider.renew(this.space, g, ceiling)));
        if (this.lost) return;
        this.grants = renewed;
        this.generator.extend(ceiling, Math.min(...renewed.map((g) => g.validUntil)));
      } catch (e) {
        if (e instanceof SequoiaError && e.code === 'LEASE_LOST') {
          this.markLost(e);
          throw e;
        }
        // The store is unreachable: keep the current deadline; the generator stops by itself when it passes.
        this.failedSinceWarn++;
        const now = this.monotonic();
        if (now - this.lastWarnAt >= RENEWAL_WARN_EVERY_MS) {
          this.logger.warn(
            { layout: this.layout.name, err: e instanceof Error ? e.message : String(e), failures: this.failedSinceWarn },
            'worker lease renewal failed',
          );
          this.lastWarnAt = now;
          this.failedSinceWarn = 0;
        }
        throw e;
      } finally {
        this.renewing = undefined;
      }
    })();
    return this.renewing;
  }

  /**
   * Stops issuing and gives every worker id back with its own last issued
   * tick (unless the lease is lost): a backup id that issued behind the
   * primary's tick (backup-worker) must not be released with the primary's.
   */
  async close(): Promise<void> {
    this.closing = true;
    this.timer?.clear();
    this.generator.revoke();
    await this.renewing?.catch(() => {});
    if (this.lost) return;
    await Promise.all(
      this.grants.map((g) => {
        const last = Math.max(this.generator.lastIssuedTickOf(g.workerId), g.afterTick);
        return this.provider.release(this.space, g, last).then(
          () =>
            this.logger.info(
              { layout: this.layout.name, workerId: g.workerId, lastTick: last, provider: this.provider.kind },
              'snowflake worker id released',
            ),
          (e: unknown) =>
            this.logger.warn(
              { layout: this.layout.name, workerId: g.workerId, err: e instanceof Error ? e.message : String(e) },
              'snowflake worker id release failed',
            ),
        );
      }),
    );
  }

  private markLost(e: Error): void {
    if (this.lost) return;
    this.lost = true;
    this.generator.revoke();
    this.timer?.clear();
    this.onLost(this);
    this.logger.error(
      { layout: this.layout.name, workerId: this.generator.workerId, err: e.message },
      'snowflake worker lease lost; issuing stopped',
    );
  }

  private lostError(): UnavailableError {
    return new UnavailableError('LEASE_LOST', `the lease for layout ${this.layout.name} is lost`, { retryAfterMs: 1000 });
  }
}
