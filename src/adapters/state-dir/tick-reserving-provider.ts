/**
 * The last snowflake tick, kept in the server's state directory whatever the
 * worker-id provider and the store (as Leaf reports its tick to ZooKeeper):
 * - every renewal first records, durably, the ceiling the generator may issue
 *   up to until the next renewal (a reservation a little ahead of the clock;
 *   ticks borrowed under `logical` are above the clock and covered the same
 *   way: the generator never passes its ceiling);
 * - a start (acquire) begins strictly after the recorded tick of that worker
 *   id, so a clock stepped back across a crash is caught by the clock policy
 *   (CLOCK_MOVED_BACKWARDS, or a bounded wait) instead of repeating;
 * - a clean release lowers the record to the last tick actually issued.
 * Ticks are kept per (id space, worker id): the workers of one server hold
 * different ids. Providers without leases become "leased" here with an
 * endless deadline, so the service renews (reserves) every half second.
 */
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';
import type { StateDir } from './state-dir.js';

/** What the provider needs of the state dir (the StateDir itself, or its proxy in a worker thread). */
export type TickRecord = Pick<StateDir, 'lastTick' | 'recordTick' | 'close'> & Partial<Pick<StateDir, 'highestTick'>>;

/** For providers without a lease: reserve about 1 s ahead, renewed every 0.5 s (the service uses ttl / 3 and 2/3 ttl). */
const UNLEASED_TTL_MS = 1500;

export class TickReservingProvider implements WorkerIdProvider {
  readonly kind: string;
  readonly leased = true;
  readonly ttlMs: number;

  constructor(
    private readonly inner: WorkerIdProvider,
    private readonly state: TickRecord,
  ) {
    this.kind = inner.kind;
    this.ttlMs = inner.leased && inner.ttlMs !== undefined ? inner.ttlMs : UNLEASED_TTL_MS;
  }

  async acquire(space: IdSpace, exclude?: readonly number[]): Promise<WorkerGrant> {
    const g = await this.inner.acquire(space, exclude);
    let recorded: number | undefined;
    try {
      recorded = await this.state.lastTick(space.key, g.workerId);
    } catch (e) {
      await this.inner.release(space, g, g.afterTick).catch(() => {});
      throw e;
    }
    return recorded !== undefined && recorded > g.afterTick ? { ...g, afterTick: recorded } : g;
  }

  async highestTick(space: IdSpace): Promise<number | undefined> {
    return this.state.highestTick?.(space.key);
  }

  async renew(space: IdSpace, grant: WorkerGrant, ceilingTick: number): Promise<WorkerGrant> {
    // Durable before the generator may issue up to it.
    await this.state.recordTick(space.key, grant.workerId, ceilingTick);
    return this.inner.leased ? this.inner.renew(space, grant, ceilingTick) : grant;
  }

  async release(space: IdSpace, grant: WorkerGrant, lastTick: number): Promise<void> {
    await this.state.recordTick(space.key, grant.workerId, lastTick, true);
    await this.inner.release(space, grant, lastTick);
  }

  async close(): Promise<void> {
    try {
      await this.inner.close();
    } finally {
      await this.state.close();
    }
  }
}
