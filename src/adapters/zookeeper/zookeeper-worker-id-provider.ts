/**
 * The `zookeeper` worker-id provider, as Leaf does it, with the gaps closed.
 *
 * ZooKeeper tree, per id space (a layout's epoch, unit and widths):
 *   <root>/<space>/forever/<identity>-0000000007   persistent; worker id 7; data {"tick":…,"atMs":…}
 *   <root>/<space>/live/<identity>                  ephemeral: this identity is running now
 *   <root>/<space>/clock                            scratch node: its mtime is ZooKeeper's own clock
 *   <root>/<space>/ledger/w0000000007-0000000003    persistent; the lease ledger: one node per holding (zookeeper-lease-ledger.ts)
 * The identity is host:port (Leaf) qualified by a hash of the state directory,
 * so the workers of `serve --workers N` (one port, one state dir each) and
 * servers on port 0 differ; `?node=NAME` sets it outright.
 *
 * - Cold start: a PERSISTENT_SEQUENTIAL node; its sequence number is the worker
 *   id (ZooKeeper numbers children of one parent uniquely, so two nodes starting
 *   together never share an id). Restart: the node named after the identity.
 * - The id and the last tick are cached in `<stateDir>/zookeeper/<space>.json`
 *   (written, fsynced, before the reservation it records is used), so a restart
 *   works while ZooKeeper is down.
 * - Every report interval (3 s) the service renews: the tick reported is the
 *   highest tick the holder may issue until the next report (a reservation, not
 *   Leaf's "now"), written to the cache file and then to the node.
 * - Start is refused while the clock is behind the reported tick by more than
 *   `maxStartWaitMs` (a crash leaves a reservation up to two intervals ahead,
 *   which is waited out), from the node and from the cached file alike (Leaf
 *   checks neither the cache nor a reservation).
 * - Leaf never reuses ids and stops at the layout's last id. Here, with
 *   `reclaimAfterMs` set, a node whose tick was not reported for that long (by
 *   ZooKeeper's clock: the node's mtime against the clock node's) can be taken
 *   over in one transaction (remove at the version read + create), so two
 *   reclaimers, or a reclaimer and a late report, cannot both win. In return, a
 *   holder stops issuing when it could not report for `reclaimAfterMs - margin`,
 *   and the new holder starts after both the node's tick and mtime + reclaimAfter.
 *   Without `reclaimAfterMs` nothing is reclaimed.
 * - A second live process with the same identity is refused at start (the
 *   ephemeral `live` node), since it would share the id. That node dies with
 *   the session, after which a process with the name may start on the id: so
 *   a holder stops issuing before its session can have expired (its last
 *   answered request + the session timeout − a margin, as the sql lease), and
 *   a holder whose session did expire gives the grant up (LEASE_LOST) and is
 *   claimed again as at a start, refused while another process has the name.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import zookeeper from 'node-zookeeper-client';
import { InvalidArgumentError, located, UnavailableError } from '../../core/errors.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';
import { type CacheFile, readCache, writeCache } from './zookeeper-cache.js';
import { type NodeData, type StartClock, ZookeeperClaimer, checkStartClock, safe } from './zookeeper-claim.js';
import { isZookeeperError, zookeeperAt } from './zookeeper-session.js';
import type { LedgerRecord } from './zookeeper-lease-ledger.js';
import { ZookeeperProviderBase, type ZookeeperProviderOptions } from './zookeeper-provider-base.js';
import { DEFAULT_ZOOKEEPER_ROOT, IDENTITY, defaultIdentity, parseZookeeperSpec } from './zookeeper-spec.js';

export { DEFAULT_ZOOKEEPER_ROOT, defaultIdentity, parseZookeeperSpec };

/** `identity`: node name prefix, default `${hostname}:${port}@${hash of the state dir}`; `connectTimeoutMs`: then the cached id is used. */
export interface ZookeeperWorkerIdProviderOptions extends ZookeeperProviderOptions {
  /** Default '/sequoia/snowflake'. */
  readonly root?: string | undefined;
  /** Where the worker id is cached (`<stateDir>/zookeeper/`). */
  readonly stateDir: string;
  /** Default os.hostname(). */
  readonly hostname?: string | undefined;
  /** Reclaim ids of nodes silent this long, ms; undefined (default): never reclaim, holders never stop (Leaf). */
  readonly reclaimAfterMs?: number | undefined;
  readonly monotonic?: (() => number) | undefined;
}

interface Held {
  readonly path: string;
  /** The tick the holder started after (the grant's afterTick, kept across renewals). */
  readonly startTick: number;
  readonly identity: string;
  readonly cacheFile: string;
  tick: number;
  /** Monotonic ms at which the last accepted report was sent. */
  reportedMono: number;
  reportedAtMs: number;
  reportFailing: boolean;
  /** This holding's ledger node; undefined for a start from the cache. */
  ledger: LedgerRecord | undefined;
  /**
   * The session whose ephemeral `live` node backs the claim; undefined for a
   * start from the cache (no claim in ZooKeeper yet).
   */
  sessionId: Buffer | undefined;
  /** That session's timeout, as ZooKeeper granted it (never above the one asked for). */
  sessionTimeoutMs: number;
  /** Monotonic ms at which the last request answered on that session was sent. */
  confirmedMono: number;
}

/** Renewals carry the reports (every interval); grants expire only with `reclaimAfterMs`. */
export class ZookeeperWorkerIdProvider extends ZookeeperProviderBase implements WorkerIdProvider {
  readonly kind = 'zookeeper';
  readonly root: string;
  private readonly stateDir: string;
  private readonly reclaimAfterMs: number | undefined;
  private readonly margin: number;
  private readonly mono: () => number;
  private readonly startClock: StartClock;
  private readonly claimer: ZookeeperClaimer;
  private readonly held = new Map<string, Held>();
  /** Cache files whose holding ended in this process: never started from the cache again. */
  private readonly lostHere = new Set<string>();

  constructor(o: ZookeeperWorkerIdProviderOptions) {
    const root = o.root ?? DEFAULT_ZOOKEEPER_ROOT;
    const host = o.hostname ?? hostname();
    const identity = o.identity ?? defaultIdentity(host, o.port ?? 0, o.stateDir);
    if (!IDENTITY.test(identity))
      throw new InvalidArgumentError(`zookeeper node identity ${JSON.stringify(identity)} has characters ZooKeeper paths cannot hold`);
    super(o, identity, { root, host: `${host}:${o.port ?? 0}` });
    const interval = this.reportIntervalMs;
    this.root = root;
    this.stateDir = o.stateDir;
    this.reclaimAfterMs = o.reclaimAfterMs;
    const r = this.reclaimAfterMs;
    // A holder stops `margin` before a reclaimer may act: room for clock-rate drift, a late timer and
    // ticks reserved ahead (logical policy) — bounded by half the period when the period is short (tests).
    this.margin = r === undefined ? 0 : Math.min(r / 2, Math.max(r / 5, 2 * interval + 5000));
    if (r !== undefined && r - this.margin < 3 * interval) {
      throw new InvalidArgumentError(
        `reclaim-after must be at least ${Math.ceil((6 * interval) / 1000)} s with a ${interval} ms report interval (a holder stops when it cannot report for half of it)`,
      );
    }
    this.mono = o.monotonic ?? (() => performance.now());
    this.startClock = { clock: this.clock, maxStartWaitMs: this.maxStartWaitMs, log: this.log };
    this.claimer = new ZookeeperClaimer({
      session: this.session,
      root: this.root,
      identity: this.identity,
      reclaimAfterMs: r,
      sessionTimeoutMs: this.sessionTimeoutMs,
      mono: this.mono,
      startClock: this.startClock,
    });
  }

  async acquire(space: IdSpace, exclude: readonly number[] = []): Promise<WorkerGrant> {
    if (this.session.isClosed) throw new UnavailableError('LEASE_LOST', 'the zookeeper worker-id provider is closed');
    const slot = exclude.length;
    const identity = slot === 0 ? this.identity : `${this.identity}~b${slot}`;
    const cacheFile = join(this.stateDir, 'zookeeper', `${safe(space.key)}${slot === 0 ? '' : `.b${slot}`}.json`);
    const cached = readCache(cacheFile, identity, this.root, space.key);
    const client = await this.session.connected(this.connectTimeoutMs);
    if (!client) return this.acquireCached(space, exclude, identity, cacheFile, cached);

    const { workerId, path, tick, how } = await this.claimer.claim(client, space, identity, exclude, cached);
    const confirmedMono = this.mono();
    const h: Held = {
      path,
      startTick: tick,
      identity,
      cacheFile,
      tick,
      reportedMono: this.mono(),
      reportedAtMs: this.clock.now(),
      reportFailing: false,
      ledger: undefined,
      sessionId: client.getSessionId(),
      sessionTimeoutMs: grantedSessionTimeout(client, this.sessionTimeoutMs),
      confirmedMono,
    };
    h.ledger = await this.ledger.open(client, space.key, workerId, how === 'reclaimed' ? 'takeover' : 'grant', tick + 1);
    this.saveCache(space, workerId, h);
    this.held.set(heldKey(space, workerId), h);
    this.log.info({ layout: space.label, workerId, afterTick: tick, node: path, how }, 'zookeeper worker id taken');
    return this.grant(workerId, h);
  }

  async renew(space: IdSpace, grant: WorkerGrant, ceilingTick: number): Promise<WorkerGrant> {
    const h = this.held.get(heldKey(space, grant.workerId));
    if (!h) throw new UnavailableError('LEASE_LOST', `worker id ${grant.workerId} is not held`);
    if (ceilingTick > h.tick) h.tick = ceilingTick;
    // Durable here before the service lets the generator use ticks up to the ceiling.
    this.saveCache(space, grant.workerId, h);
    await this.report(space, grant.workerId, h);
    return this.grant(grant.workerId, h);
  }

  async release(space: IdSpace, grant: WorkerGrant, lastTick: number): Promise<void> {
    const key = heldKey(space, grant.workerId);
    const h = this.held.get(key);
    if (!h) return;
    this.held.delete(key);
    // Issuing has stopped: the tick actually issued replaces the reservation.
    h.tick = lastTick;
    if (h.ledger) h.ledger.data.released = true;
    this.saveCache(space, grant.workerId, h);
    // Without the claim's session the node and the live node may be another process's now: left alone.
    if (h.sessionId === undefined || !this.session.holds(h.sessionId)) return;
    await this.report(space, grant.workerId, h).catch(() => {});
    await this.claimer.leave(space, h.identity);
  }

  /** ZooKeeper is unreachable: start from the cached id, unless it may have been reclaimed meanwhile. */
  private async acquireCached(
    space: IdSpace,
    exclude: readonly number[],
    identity: string,
    cacheFile: string,
    cached: CacheFile | undefined,
  ): Promise<WorkerGrant> {
    if (this.lostHere.has(cacheFile)) {
      // This process's claim ended (session expired, or ZooKeeper seen after a cache start): another
      // process may hold the name now, which only ZooKeeper can tell.
      throw zookeeperAt(
        this.session.connect,
        (zk) =>
          `${zk ?? 'ZooKeeper'} is unreachable and this process's claim on ${zk ? identity : 'its name'} ended; the worker id is claimed again only through ZooKeeper`,
        { extra: `identity ${identity}`, retryAfterMs: 1000 },
      );
    }
    if (!cached) {
      throw zookeeperAt(
        this.session.connect,
        (zk) =>
          zk
            ? `${zk} is unreachable and ${cacheFile} holds no worker id for ${identity}; a first start needs ZooKeeper`
            : 'ZooKeeper is unreachable and the cache file holds no worker id for this process; a first start needs ZooKeeper',
        { extra: `cache file ${cacheFile}, identity ${identity}`, retryAfterMs: 1000 },
      );
    }
    if (exclude.includes(cached.workerId) || cached.workerId >= space.workerCount)
      throw new UnavailableError('LEASE_LOST', `the cached worker id ${cached.workerId} cannot be used here`);
    await checkStartClock(this.startClock, space, cached.tick, { what: 'the cached file', where: cacheFile });
    const silentMs = this.clock.now() - cached.reportedAtMs;
    if (this.reclaimAfterMs !== undefined && silentMs >= this.reclaimAfterMs - this.margin) {
      throw new UnavailableError(
        'LEASE_LOST',
        `ZooKeeper is unreachable and worker id ${cached.workerId} was last reported ${Math.round(silentMs / 1000)} s ago: it may have been reclaimed (reclaim-after ${this.reclaimAfterMs / 1000} s)`,
        { retryAfterMs: 1000 },
      );
    }
    const h: Held = {
      path: cached.path,
      startTick: cached.tick,
      identity,
      cacheFile,
      tick: cached.tick,
      reportedMono: this.mono() - Math.max(0, silentMs),
      reportedAtMs: cached.reportedAtMs,
      reportFailing: true,
      ledger: undefined,
      sessionId: undefined,
      sessionTimeoutMs: this.sessionTimeoutMs,
      confirmedMono: this.mono(),
    };
    this.held.set(heldKey(space, cached.workerId), h);
    this.log.warn(
      { layout: space.label, workerId: cached.workerId, afterTick: cached.tick, cacheFile, zookeeper: this.session.connect },
      'zookeeper unreachable: starting from the cached worker id',
    );
    return this.grant(cached.workerId, h);
  }

  private saveCache(space: IdSpace, workerId: number, h: Held): void {
    writeCache(h.cacheFile, {
      identity: h.identity,
      root: this.root,
      space: space.key,
      path: h.path,
      workerId,
      tick: h.tick,
      reportedAtMs: h.reportedAtMs,
    });
  }

  private grant(workerId: number, h: Held): WorkerGrant {
    const r = this.reclaimAfterMs;
    // The session outlives its last answered request by its timeout (ZooKeeper's timer restarts at each
    // request it receives): stop before, as the sql lease does, so no one can take the live node while we issue.
    const session =
      h.sessionId === undefined ? Number.POSITIVE_INFINITY : h.confirmedMono + h.sessionTimeoutMs - sessionMargin(h.sessionTimeoutMs);
    return {
      workerId,
      generation: 1,
      afterTick: h.startTick,
      validUntil: Math.min(session, r === undefined ? Number.POSITIVE_INFINITY : h.reportedMono + r - this.margin),
      expiresAtMs: r === undefined ? undefined : h.reportedAtMs + r,
      leaseMs: r,
    };
  }

  /**
   * Sends the tick to the node, on the session that holds the claim only. A
   * failure to reach ZooKeeper is logged and thrown as STORE_UNAVAILABLE, so
   * the generator keeps its ceiling and deadline (the cache file holds the
   * tick); a start from the cache, which holds no claim, goes on issuing, and
   * claims its live node at the first report that reaches ZooKeeper. Throws
   * LEASE_LOST when the claim is gone or cannot be had: the node removed, the
   * session ended, another live process with the name (then the service
   * claims again, through the checks of a start).
   */
  private async report(space: IdSpace, workerId: number, h: Held): Promise<void> {
    if (h.sessionId !== undefined && !this.session.holds(h.sessionId)) {
      throw this.lose(space, workerId, h, EXPIRED);
    }
    const client = this.session.connectedNow();
    const t0 = this.mono();
    const wall0 = this.clock.now();
    let ended: string | undefined;
    try {
      if (!client) throw new Error('not connected');
      if (h.sessionId === undefined || h.ledger === undefined) {
        ended = await this.claimer.rejoin(client, space, h.identity, h.path, h.startTick);
        if (ended === undefined) {
          h.sessionId = client.getSessionId();
          h.sessionTimeoutMs = grantedSessionTimeout(client, this.sessionTimeoutMs);
          h.confirmedMono = t0;
          this.log.info({ layout: space.label, workerId, node: h.path }, 'zookeeper claim taken for the worker id started from the cache');
          // Recorded from the tick it started after.
          h.ledger = await this.ledger.open(client, space.key, workerId, 'grant', h.startTick + 1);
        }
      }
      if (ended === undefined && h.sessionId !== undefined && h.ledger !== undefined) {
        const data: NodeData = { tick: h.tick, atMs: wall0, identity: h.identity };
        await this.ledger.report(client, h.path, Buffer.from(JSON.stringify(data)), h.ledger, h.tick, wall0);
        // A client keeps one session, but its expiry may have been told while the request ran.
        if (!this.session.holds(h.sessionId)) ended = EXPIRED;
      }
    } catch (e) {
      if (isZookeeperError(e, zookeeper.Exception.SESSION_EXPIRED)) {
        ended = EXPIRED;
      } else if (isZookeeperError(e, zookeeper.Exception.NO_NODE)) {
        this.log.error(
          { layout: space.label, workerId, node: h.path },
          'zookeeper node of this worker id is gone (reclaimed?); issuing stopped',
        );
        const { message, located: split } = located(
          (w) => `ZooKeeper node${w ? ` ${w}` : ''} of worker id ${workerId} is gone (reclaimed by another host?)`,
          h.path,
        );
        throw new UnavailableError('LEASE_LOST', message, { cause: e, retryAfterMs: 1000, located: split });
      } else {
        const err = e instanceof Error || e instanceof zookeeper.Exception ? e.toString() : String(e);
        const stopsInMs = Math.round(this.grant(workerId, h).validUntil - this.mono());
        if (!h.reportFailing) {
          h.reportFailing = true;
          this.log.warn(
            { layout: space.label, workerId, node: h.path, err, stopsInMs: Number.isFinite(stopsInMs) ? stopsInMs : undefined },
            'zookeeper tick report failed; the tick is kept in the cache file',
          );
        }
        if (h.sessionId === undefined) return;
        const stops = stopsInMs > 0 ? `in ${stopsInMs} ms` : 'now';
        // ZooKeeper's error may name the node: the operator's, with the ensemble.
        throw zookeeperAt(
          this.session.connect,
          (zk) =>
            `${zk ?? 'ZooKeeper'} did not take the tick report of worker id ${workerId}${zk ? ` (${err})` : ''}; issuing stops ${stops} unless a report gets through`,
          { code: 'STORE_UNAVAILABLE', extra: err, cause: e, retryAfterMs: 1000 },
        );
      }
    }
    if (ended !== undefined) throw this.lose(space, workerId, h, ended);
    h.reportedMono = t0;
    h.reportedAtMs = wall0;
    h.confirmedMono = t0;
    if (h.reportFailing) {
      h.reportFailing = false;
      this.log.info({ layout: space.label, workerId, node: h.path }, 'zookeeper tick reports resumed');
    }
  }

  /** The holding's claim has ended: forgotten here, never taken from the cache again in this process. */
  private lose(space: IdSpace, workerId: number, h: Held, why: string): UnavailableError {
    this.held.delete(heldKey(space, workerId));
    this.lostHere.add(h.cacheFile);
    this.log.warn({ layout: space.label, workerId, node: h.path }, `zookeeper claim on this worker id ended (${why}); claiming it again`);
    const { message, located: split } = located((w) => `the claim on worker id ${workerId}${w ? ` (${w})` : ''} ended: ${why}`, h.path);
    return new UnavailableError('LEASE_LOST', message, { retryAfterMs: 1000, located: split });
  }
}

/** The timeout ZooKeeper granted (it bounds what a client asks for), never above the one asked for. */
function grantedSessionTimeout(client: zookeeper.Client, asked: number): number {
  const granted = client.getSessionTimeout();
  return granted > 0 ? Math.min(granted, asked) : asked;
}

/** As the sql lease's margin: room for clock-rate drift between this host and ZooKeeper, and for a late timer. */
function sessionMargin(timeoutMs: number): number {
  return Math.min(2000, Math.max(50, Math.floor(timeoutMs / 5)));
}

const EXPIRED = 'its ZooKeeper session expired: its live node is gone and another process may hold the name';

function heldKey(space: IdSpace, workerId: number): string {
  return `${space.key}#${workerId}`;
}
