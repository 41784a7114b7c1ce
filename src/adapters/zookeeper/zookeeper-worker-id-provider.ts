/**
 * The `zookeeper` worker-id provider, as Leaf does it, with the gaps closed.
 *
 * ZooKeeper tree, per id space (a layout's epoch, unit and widths):
 *   <root>/<space>/forever/<identity>-0000000007   persistent; worker id 7; data {"tick":…,"atMs":…}
 *   <root>/<space>/live/<identity>                  ephemeral: this identity is running now
 *   <root>/<space>/clock                            scratch node: its mtime is ZooKeeper's own clock
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
 *   Without `reclaimAfterMs` holders never stop (Leaf), and nothing is reclaimed.
 * - A second live process with the same identity is refused at start (the
 *   ephemeral `live` node), since it would share the id.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import zookeeper from 'node-zookeeper-client';
import { ClockError, InvalidArgumentError, UnavailableError } from '../../core/errors.js';
import { type Clock, systemClock } from '../../core/clock.js';
import { silentLogger } from '../../core/silent-logger.js';
import type { Logger } from '../../ports/logger.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';
import { readCache, writeCache } from './zookeeper-cache.js';
import { type ZookeeperSpec, DEFAULT_ZOOKEEPER_ROOT, IDENTITY, defaultIdentity, parseZookeeperSpec } from './zookeeper-spec.js';

export { type ZookeeperSpec, DEFAULT_ZOOKEEPER_ROOT, defaultIdentity, parseZookeeperSpec };

export interface ZookeeperWorkerIdProviderOptions {
  /** Connection string, `host:port[,host:port…]`. */
  readonly connect: string;
  /** Default '/sequoia/snowflake'. */
  readonly root?: string | undefined;
  /** Where the worker id is cached (`<stateDir>/zookeeper/`). */
  readonly stateDir: string;
  /** Node name prefix; default `${hostname}:${port}@${hash of the state dir}`. */
  readonly identity?: string | undefined;
  /** Used by the default identity. Default 0. */
  readonly port?: number | undefined;
  /** Default os.hostname(). */
  readonly hostname?: string | undefined;
  /** How often the tick is reported, ms. Default 3000. */
  readonly reportIntervalMs?: number | undefined;
  /** Reclaim ids of nodes silent this long, ms; undefined (default): never reclaim, holders never stop (Leaf). */
  readonly reclaimAfterMs?: number | undefined;
  /** Largest gap between the clock and the reported tick waited out at start, ms. Default 2 × interval + 2000. */
  readonly maxStartWaitMs?: number | undefined;
  /** How long a start waits for ZooKeeper before using the cached id, ms. Default 3000. */
  readonly connectTimeoutMs?: number | undefined;
  /** Per request, ms. Default 3000. */
  readonly requestTimeoutMs?: number | undefined;
  /** ZooKeeper session timeout, ms (the `live` node of a crashed process lasts this long). Default 6000. */
  readonly sessionTimeoutMs?: number | undefined;
  readonly clock?: Clock | undefined;
  readonly monotonic?: (() => number) | undefined;
  readonly logger?: Logger | undefined;
}

interface NodeData {
  readonly tick: number;
  readonly atMs?: number;
  readonly identity?: string;
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
}

type Callback<T> = (error: Error | zookeeper.Exception | null, result: T) => void;

const SEQ_DIGITS = 10;

export class ZookeeperWorkerIdProvider implements WorkerIdProvider {
  readonly kind = 'zookeeper';
  /** Renewals carry the reports (every interval); grants expire only with `reclaimAfterMs`. */
  readonly leased = true;
  readonly ttlMs: number;
  readonly identity: string;
  readonly root: string;
  private readonly connect: string;
  private readonly stateDir: string;
  private readonly reclaimAfterMs: number | undefined;
  private readonly margin: number;
  private readonly maxStartWaitMs: number;
  private readonly connectTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly sessionTimeoutMs: number;
  private readonly clock: Clock;
  private readonly mono: () => number;
  private readonly log: Logger;
  private client: zookeeper.Client | undefined;
  private readonly held = new Map<string, Held>();
  private closed = false;

  constructor(o: ZookeeperWorkerIdProviderOptions) {
    const interval = o.reportIntervalMs ?? 3000;
    if (!Number.isSafeInteger(interval) || interval < 100) throw new InvalidArgumentError('zookeeper report interval must be an integer of at least 100 ms');
    // The service renews every ttl/3 and reserves 2·ttl/3 ahead: report every interval, reserve two ahead.
    this.ttlMs = 3 * interval;
    this.connect = o.connect;
    this.root = o.root ?? DEFAULT_ZOOKEEPER_ROOT;
    this.stateDir = o.stateDir;
    this.identity = o.identity ?? defaultIdentity(o.hostname ?? hostname(), o.port ?? 0, o.stateDir);
    if (!IDENTITY.test(this.identity)) throw new InvalidArgumentError(`zookeeper node identity ${JSON.stringify(this.identity)} has characters ZooKeeper paths cannot hold`);
    this.reclaimAfterMs = o.reclaimAfterMs;
    const r = this.reclaimAfterMs;
    // A holder stops `margin` before a reclaimer may act: room for clock-rate drift, a late timer and
    // ticks reserved ahead (logical policy) — bounded by half the period when the period is short (tests).
    this.margin = r === undefined ? 0 : Math.min(r / 2, Math.max(r / 5, 2 * interval + 5000));
    if (r !== undefined && r - this.margin < 3 * interval) {
      throw new InvalidArgumentError(`reclaim-after must be at least ${Math.ceil((6 * interval) / 1000)} s with a ${interval} ms report interval (a holder stops when it cannot report for half of it)`);
    }
    this.maxStartWaitMs = o.maxStartWaitMs ?? 2 * interval + 2000;
    this.connectTimeoutMs = o.connectTimeoutMs ?? 3000;
    this.requestTimeoutMs = o.requestTimeoutMs ?? 3000;
    this.sessionTimeoutMs = o.sessionTimeoutMs ?? 6000;
    this.clock = o.clock ?? systemClock;
    this.mono = o.monotonic ?? (() => performance.now());
    this.log = o.logger ?? silentLogger;
  }

  async acquire(space: IdSpace, exclude: readonly number[] = []): Promise<WorkerGrant> {
    if (this.closed) throw new UnavailableError('LEASE_LOST', 'the zookeeper worker-id provider is closed');
    const slot = exclude.length;
    const identity = slot === 0 ? this.identity : `${this.identity}~b${slot}`;
    const cacheFile = join(this.stateDir, 'zookeeper', `${safe(space.key)}${slot === 0 ? '' : `.b${slot}`}.json`);
    const cached = readCache(cacheFile, identity, this.root, space.key);
    const client = await this.connected(this.connectTimeoutMs);

    if (!client) {
      if (!cached) {
        throw new UnavailableError('LEASE_LOST', `ZooKeeper ${this.connect} is unreachable and ${cacheFile} holds no worker id for ${identity}; a first start needs ZooKeeper`, {
          retryAfterMs: 1000,
        });
      }
      if (exclude.includes(cached.workerId) || cached.workerId >= space.workerCount) throw new UnavailableError('LEASE_LOST', `the cached worker id ${cached.workerId} cannot be used here`);
      await this.checkClock(space, cached.tick, `the cached file ${cacheFile}`);
      const silentMs = this.clock.now() - cached.reportedAtMs;
      if (this.reclaimAfterMs !== undefined && silentMs >= this.reclaimAfterMs - this.margin) {
        throw new UnavailableError(
          'LEASE_LOST',
          `ZooKeeper is unreachable and worker id ${cached.workerId} was last reported ${Math.round(silentMs / 1000)} s ago: it may have been reclaimed (reclaim-after ${this.reclaimAfterMs / 1000} s)`,
          { retryAfterMs: 1000 },
        );
      }
      const h: Held = { path: cached.path, startTick: cached.tick, identity, cacheFile, tick: cached.tick, reportedMono: this.mono() - Math.max(0, silentMs), reportedAtMs: cached.reportedAtMs, reportFailing: true };
      this.held.set(heldKey(space, cached.workerId), h);
      this.log.warn({ layout: space.label, workerId: cached.workerId, afterTick: cached.tick, cacheFile, zookeeper: this.connect }, 'zookeeper unreachable: starting from the cached worker id');
      return this.grant(cached.workerId, h);
    }

    const spaceDir = `${this.root}/${safe(space.key)}`;
    const forever = `${spaceDir}/forever`;
    await this.call<string>((cb) => client.mkdirp(forever, cb));
    await this.call<string>((cb) => client.mkdirp(`${spaceDir}/live`, cb));
    await this.guard(client, `${spaceDir}/live/${identity}`);

    const [children, parent] = await this.call2<string[], zookeeper.Stat>((cb) => client.getChildren(forever, cb));
    const mine = children
      .map(parseChild)
      .filter((c): c is { identity: string; id: number; name: string } => c !== undefined && c.identity === identity && c.id < space.workerCount && !exclude.includes(c.id))
      .sort((a, b) => a.id - b.id);
    let workerId: number;
    let path: string;
    let tick: number;
    let how: string;
    const mineFirst = mine[0];
    if (mineFirst) {
      workerId = mineFirst.id;
      path = `${forever}/${mineFirst.name}`;
      const [data] = await this.call2<Buffer, zookeeper.Stat>((cb) => client.getData(path, cb));
      tick = parseData(data).tick;
      if (cached && cached.path === path && cached.tick > tick) tick = cached.tick; // a report ZooKeeper missed
      await this.checkClock(space, tick, `ZooKeeper node ${path}`);
      how = 'restart: own node';
    } else {
      const fresh = parent.cversion < space.workerCount ? await this.createSequential(client, forever, identity, space) : undefined;
      if (fresh) {
        ({ workerId, path } = fresh);
        tick = -1;
        how = 'cold start: new sequential node';
      } else {
        ({ workerId, path, tick } = await this.reclaim(client, spaceDir, identity, space, exclude, children));
        await this.checkClock(space, tick, `reclaimed node ${path}`);
        how = 'reclaimed';
      }
    }
    const h: Held = { path, startTick: tick, identity, cacheFile, tick, reportedMono: this.mono(), reportedAtMs: this.clock.now(), reportFailing: false };
    writeCache(cacheFile, { identity, root: this.root, space: space.key, path, workerId, tick, reportedAtMs: h.reportedAtMs });
    this.held.set(heldKey(space, workerId), h);
    this.log.info({ layout: space.label, workerId, afterTick: tick, node: path, how }, 'zookeeper worker id taken');
    return this.grant(workerId, h);
  }

  async renew(space: IdSpace, grant: WorkerGrant, ceilingTick: number): Promise<WorkerGrant> {
    const h = this.held.get(heldKey(space, grant.workerId));
    if (!h) throw new UnavailableError('LEASE_LOST', `worker id ${grant.workerId} is not held`);
    if (ceilingTick > h.tick) h.tick = ceilingTick;
    // Durable here before the service lets the generator use ticks up to the ceiling.
    writeCache(h.cacheFile, { identity: h.identity, root: this.root, space: space.key, path: h.path, workerId: grant.workerId, tick: h.tick, reportedAtMs: h.reportedAtMs });
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
    writeCache(h.cacheFile, { identity: h.identity, root: this.root, space: space.key, path: h.path, workerId: grant.workerId, tick: h.tick, reportedAtMs: h.reportedAtMs });
    await this.report(space, grant.workerId, h).catch(() => {});
    const client = this.client;
    if (client && isConnected(client)) {
      await this.call<void>((cb) => client.remove(`${this.root}/${safe(space.key)}/live/${h.identity}`, -1, (e) => cb(e, undefined))).catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.client?.close();
    this.client = undefined;
  }

  private grant(workerId: number, h: Held): WorkerGrant {
    const r = this.reclaimAfterMs;
    return {
      workerId,
      generation: 1,
      afterTick: h.startTick,
      validUntil: r === undefined ? Number.POSITIVE_INFINITY : h.reportedMono + r - this.margin,
      expiresAtMs: r === undefined ? undefined : h.reportedAtMs + r,
    };
  }

  /** Sends the tick to the node; a failure to reach ZooKeeper is logged, not thrown (the cache file holds the tick). */
  private async report(space: IdSpace, workerId: number, h: Held): Promise<void> {
    const client = this.client ?? (this.closed ? undefined : this.newClient());
    const t0 = this.mono();
    const wall0 = this.clock.now();
    try {
      if (!client || !isConnected(client)) throw new Error('not connected');
      const data: NodeData = { tick: h.tick, atMs: wall0, identity: h.identity };
      await this.call<zookeeper.Stat>((cb) => client.setData(h.path, Buffer.from(JSON.stringify(data)), -1, cb));
    } catch (e) {
      if (e instanceof zookeeper.Exception && e.getCode() === zookeeper.Exception.NO_NODE) {
        this.log.error({ layout: space.label, workerId, node: h.path }, 'zookeeper node of this worker id is gone (reclaimed?); issuing stopped');
        throw new UnavailableError('LEASE_LOST', `ZooKeeper node ${h.path} of worker id ${workerId} is gone (reclaimed by another host?)`, { cause: e, retryAfterMs: 1000 });
      }
      if (!h.reportFailing) {
        h.reportFailing = true;
        this.log.warn(
          { layout: space.label, workerId, node: h.path, err: e instanceof Error ? e.message : String(e), stopsInMs: this.reclaimAfterMs === undefined ? undefined : Math.round(h.reportedMono + this.reclaimAfterMs - this.margin - this.mono()) },
          'zookeeper tick report failed; the tick is kept in the cache file',
        );
      }
      return;
    }
    h.reportedMono = t0;
    h.reportedAtMs = wall0;
    if (h.reportFailing) {
      h.reportFailing = false;
      this.log.info({ layout: space.label, workerId, node: h.path }, 'zookeeper tick reports resumed');
    }
  }

  /** Refuses (CLOCK_MOVED_BACKWARDS) when the clock is behind `tick` by more than maxStartWaitMs; waits out a smaller gap. */
  private async checkClock(space: IdSpace, tick: number, source: string): Promise<void> {
    if (tick < 0) return;
    const epoch = space.epochMs ?? epochFromKey(space.key);
    const gapMs = epoch + (tick + 1) * space.unitMs - this.clock.now();
    if (gapMs <= 0) return;
    if (gapMs > this.maxStartWaitMs) {
      this.log.error({ layout: space.label, tick, gapMs, source }, 'snowflake start refused: the clock is behind the reported tick');
      throw new ClockError(`the clock is ${gapMs} ms behind the tick reported in ${source} (tick ${tick}); start refused until the clock passes it`, { retryAfterMs: gapMs });
    }
    this.log.warn({ layout: space.label, tick, gapMs, source }, 'clock behind the reported tick at start: waiting');
    await sleep(gapMs);
    if (this.clock.now() < epoch + (tick + 1) * space.unitMs) {
      throw new ClockError(`the clock is still behind the tick reported in ${source} after waiting ${gapMs} ms; start refused`, { retryAfterMs: gapMs });
    }
  }

  /** The ephemeral `live` node: refuses while another session (a live process with this identity) holds it. */
  private async guard(client: zookeeper.Client, path: string): Promise<void> {
    const until = this.mono() + this.sessionTimeoutMs + 2000;
    for (;;) {
      try {
        await this.call<string>((cb) => client.create(path, Buffer.from(this.identity), zookeeper.CreateMode.EPHEMERAL, cb));
        return;
      } catch (e) {
        if (!(e instanceof zookeeper.Exception && e.getCode() === zookeeper.Exception.NODE_EXISTS)) throw unavailable(e);
      }
      const stat = await this.call<zookeeper.Stat | undefined>((cb) => client.exists(path, (e, s) => cb(e, s ?? undefined)));
      if (stat && stat.ephemeralOwner.equals(client.getSessionId())) return;
      if (stat && this.mono() >= until) {
        throw new UnavailableError('LEASE_LOST', `another live process runs as ${path.slice(path.lastIndexOf('/') + 1)} (same host, port and state directory?); it would share the worker id`, {
          retryAfterMs: this.sessionTimeoutMs,
        });
      }
      if (stat) await sleep(250);
    }
  }

  private async createSequential(client: zookeeper.Client, forever: string, identity: string, space: IdSpace): Promise<{ workerId: number; path: string } | undefined> {
    const data: NodeData = { tick: -1, atMs: this.clock.now(), identity };
    const path = await this.call<string>((cb) => client.create(`${forever}/${identity}-`, Buffer.from(JSON.stringify(data)), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb));
    const id = Number(path.slice(-SEQ_DIGITS));
    if (id < space.workerCount) return { workerId: id, path };
    // Raced past the last id: this node is useless; the id space is full.
    await this.call<void>((cb) => client.remove(path, -1, (e) => cb(e, undefined))).catch(() => {});
    return undefined;
  }

  /** Takes over the node silent the longest, if silent for longer than reclaimAfterMs (ZooKeeper's clock). */
  private async reclaim(
    client: zookeeper.Client,
    spaceDir: string,
    identity: string,
    space: IdSpace,
    exclude: readonly number[],
    children: readonly string[],
  ): Promise<{ workerId: number; path: string; tick: number }> {
    const r = this.reclaimAfterMs;
    if (r === undefined) {
      throw new UnavailableError(
        'ID_SPACE_EXHAUSTED',
        `every worker id of layout ${space.label} (0..${space.workerCount - 1}) has been handed out in ZooKeeper and ids are never reused; set reclaim-after=SECONDS to reclaim ids of nodes silent that long`,
      );
    }
    await this.call<string>((cb) => client.mkdirp(`${spaceDir}/clock`, cb));
    const clockStat = await this.call<zookeeper.Stat>((cb) => client.setData(`${spaceDir}/clock`, Buffer.from(identity), -1, cb));
    const zkNow = zkTime(clockStat.mtime);
    const candidates: { id: number; name: string; tick: number; version: number; mtime: number }[] = [];
    for (const name of children) {
      const c = parseChild(name);
      if (!c || c.id >= space.workerCount || exclude.includes(c.id) || c.identity === identity) continue;
      try {
        const [data, stat] = await this.call2<Buffer, zookeeper.Stat>((cb) => client.getData(`${spaceDir}/forever/${name}`, cb));
        const mtime = zkTime(stat.mtime);
        if (zkNow - mtime > r) candidates.push({ id: c.id, name, tick: parseData(data).tick, version: stat.version, mtime });
      } catch {
        // gone meanwhile (another reclaimer): skip
      }
    }
    candidates.sort((a, b) => a.mtime - b.mtime || a.id - b.id);
    for (const c of candidates) {
      // The old holder stopped issuing before mtime + reclaimAfter − margin by its clock; start after both.
      const epoch = space.epochMs ?? epochFromKey(space.key);
      const tick = Math.max(c.tick, Math.floor((c.mtime + r - epoch) / space.unitMs));
      const path = `${spaceDir}/forever/${identity}-${String(c.id).padStart(SEQ_DIGITS, '0')}`;
      const data: NodeData = { tick, atMs: this.clock.now(), identity };
      try {
        await this.call<unknown>((cb) =>
          client
            .transaction()
            .remove(`${spaceDir}/forever/${c.name}`, c.version)
            .create(path, Buffer.from(JSON.stringify(data)), zookeeper.CreateMode.PERSISTENT)
            .commit(cb),
        );
      } catch (e) {
        if (e instanceof zookeeper.Exception && e.getCode() === zookeeper.Exception.CONNECTION_LOSS) throw unavailable(e);
        continue; // reported meanwhile, or taken by another reclaimer
      }
      this.log.warn(
        { layout: space.label, workerId: c.id, from: c.name, silentSeconds: Math.round((zkNow - c.mtime) / 1000), afterTick: tick },
        'zookeeper worker id reclaimed from a silent node',
      );
      return { workerId: c.id, path, tick };
    }
    throw new UnavailableError('ID_SPACE_EXHAUSTED', `every worker id of layout ${space.label} is in use and none was silent for more than ${r / 1000} s`, {
      retryAfterMs: 10_000,
    });
  }

  private newClient(): zookeeper.Client {
    const c = zookeeper.createClient(this.connect, { sessionTimeout: this.sessionTimeoutMs, spinDelay: 500, retries: 1 });
    c.on('expired', () => {
      // A dead session never reconnects: start a new client on the next use.
      if (this.client === c) this.client = undefined;
      c.close();
    });
    c.connect();
    this.client = c;
    return c;
  }

  /** The client once connected, or undefined after `ms`. */
  private async connected(ms: number): Promise<zookeeper.Client | undefined> {
    const c = this.client ?? this.newClient();
    if (isConnected(c)) return c;
    return new Promise((res) => {
      const done = (v: zookeeper.Client | undefined) => {
        clearTimeout(timer);
        c.removeListener('connected', onConnected);
        res(v);
      };
      const onConnected = () => done(c);
      const timer = setTimeout(() => done(isConnected(c) ? c : undefined), ms);
      c.on('connected', onConnected);
    });
  }

  private call<T>(f: (cb: Callback<T>) => void): Promise<T> {
    return new Promise<T>((res, rej) => {
      const timer = setTimeout(() => rej(new UnavailableError('LEASE_LOST', `ZooKeeper ${this.connect} did not answer within ${this.requestTimeoutMs} ms`)), this.requestTimeoutMs);
      f((e, r) => {
        clearTimeout(timer);
        if (e) rej(e);
        else res(r);
      });
    });
  }

  private call2<A, B>(f: (cb: (e: Error | zookeeper.Exception | null, a: A, b: B) => void) => void): Promise<[A, B]> {
    return this.call<[A, B]>((cb) => f((e, a, b) => cb(e, [a, b])));
  }
}

function isConnected(c: zookeeper.Client): boolean {
  return c.getState() === zookeeper.State.SYNC_CONNECTED;
}

function unavailable(e: unknown): UnavailableError {
  if (e instanceof UnavailableError) return e;
  return new UnavailableError('LEASE_LOST', `ZooKeeper failed: ${e instanceof Error || e instanceof zookeeper.Exception ? e.toString() : String(e)}`, { cause: e, retryAfterMs: 1000 });
}

function heldKey(space: IdSpace, workerId: number): string {
  return `${space.key}#${workerId}`;
}

/** Path component for ZooKeeper and file names. */
function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '_');
}

function parseChild(name: string): { identity: string; id: number; name: string } | undefined {
  const i = name.lastIndexOf('-');
  const digits = name.slice(i + 1);
  if (i <= 0 || !/^[0-9]{10}$/.test(digits)) return undefined;
  return { identity: name.slice(0, i), id: Number(digits), name };
}

function parseData(b: Buffer | undefined): NodeData {
  try {
    const d = JSON.parse(b?.toString('utf8') ?? '') as Partial<NodeData>;
    if (typeof d.tick === 'number' && Number.isSafeInteger(d.tick) && d.tick >= -1) return d as NodeData;
  } catch {
    // fall through
  }
  return { tick: -1 };
}

/** A ZooKeeper stat time (8-byte big-endian ms since the Unix epoch) as a number. */
function zkTime(b: Buffer): number {
  return Number(b.readBigInt64BE(0));
}

function epochFromKey(key: string): number {
  const m = /^e(-?[0-9]+)\./.exec(key);
  if (!m) throw new InvalidArgumentError(`id space ${key} names no epoch`);
  return Number(m[1]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
