/**
 * Claiming a worker id in the ZooKeeper tree (the provider's header describes
 * the tree and the rules): the identity's own node on a restart, a new
 * sequential node on a cold start, or, with `reclaimAfterMs`, the node silent
 * the longest, taken over in one transaction. The ephemeral `live` node keeps
 * a second live process with the same identity out.
 */
import zookeeper from 'node-zookeeper-client';
import { ClockError, InvalidArgumentError, located, UnavailableError } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../ports/logger.js';
import type { IdSpace } from '../../ports/worker-id-provider.js';
import type { CacheFile } from './zookeeper-cache.js';
import { type ZookeeperSession, isZookeeperError, unavailable } from './zookeeper-session.js';

export interface NodeData {
  readonly tick: number;
  readonly atMs?: number;
  readonly identity?: string;
}

export interface Claim {
  readonly workerId: number;
  readonly path: string;
  /** The tick the holder starts after (-1: none issued yet). */
  readonly tick: number;
  /** How the id was found, for the log. */
  readonly how: string;
}

/** What the start-time clock check needs. */
export interface StartClock {
  readonly clock: Clock;
  /** Largest gap between the clock and the reported tick waited out at start, ms. */
  readonly maxStartWaitMs: number;
  readonly log: Logger;
}

export interface ZookeeperClaimerOptions {
  readonly session: ZookeeperSession;
  readonly root: string;
  /** The provider's identity, written into `live` nodes. */
  readonly identity: string;
  readonly reclaimAfterMs: number | undefined;
  readonly sessionTimeoutMs: number;
  readonly mono: () => number;
  readonly startClock: StartClock;
}

type Child = { identity: string; id: number; name: string };

/** One claim's view of a space's tree, what reclaiming reads it through. */
interface SpaceView {
  readonly client: zookeeper.Client;
  readonly spaceDir: string;
  readonly identity: string;
  readonly space: IdSpace;
  readonly exclude: readonly number[];
  /** The names under `forever`. */
  readonly children: readonly string[];
}

/** A silent node, as read at its version. */
type Silent = { id: number; name: string; tick: number; version: number; mtime: number };

const SEQ_DIGITS = 10;

export class ZookeeperClaimer {
  constructor(private readonly o: ZookeeperClaimerOptions) {}

  /** Finds or takes a worker id for `identity` (one per backup slot), refusing while another live process holds the identity. */
  async claim(
    client: zookeeper.Client,
    space: IdSpace,
    identity: string,
    exclude: readonly number[],
    cached: CacheFile | undefined,
  ): Promise<Claim> {
    const s = this.o.session;
    const spaceDir = `${this.o.root}/${safe(space.key)}`;
    const forever = `${spaceDir}/forever`;
    await s.call<string>((cb) => client.mkdirp(forever, cb));
    await s.call<string>((cb) => client.mkdirp(`${spaceDir}/live`, cb));
    await this.guard(client, `${spaceDir}/live/${identity}`);

    const [children, parent] = await s.call2<string[], zookeeper.Stat>((cb) => client.getChildren(forever, cb));
    const mine = children
      .map(parseChild)
      .filter((c): c is Child => c !== undefined && c.identity === identity && c.id < space.workerCount && !exclude.includes(c.id))
      .sort((a, b) => a.id - b.id);
    const mineFirst = mine[0];
    if (mineFirst) {
      const path = `${forever}/${mineFirst.name}`;
      const [data] = await s.call2<Buffer, zookeeper.Stat>((cb) => client.getData(path, cb));
      let tick = parseData(data).tick;
      if (cached && cached.path === path && cached.tick > tick) tick = cached.tick; // a report ZooKeeper missed
      await checkStartClock(this.o.startClock, space, tick, { what: 'ZooKeeper node', where: path });
      return { workerId: mineFirst.id, path, tick, how: 'restart: own node' };
    }
    const fresh = parent.cversion < space.workerCount ? await this.createSequential(client, forever, identity, space) : undefined;
    if (fresh) return { ...fresh, tick: -1, how: 'cold start: new sequential node' };
    const taken = await this.reclaim({ client, spaceDir, identity, space, exclude, children });
    await checkStartClock(this.o.startClock, space, taken.tick, { what: 'reclaimed node', where: taken.path });
    return { ...taken, how: 'reclaimed' };
  }

  /**
   * Claims, on the client's session, a holding that runs without one (started
   * from the cache while ZooKeeper was down): its `live` node, without waiting
   * for another session's to go (the holding is issuing), and its node not
   * reported past the tick the holding started after. Undefined when claimed,
   * else why not (the caller then claims as at a start).
   */
  async rejoin(client: zookeeper.Client, space: IdSpace, identity: string, path: string, startTick: number): Promise<string | undefined> {
    const s = this.o.session;
    const live = `${this.o.root}/${safe(space.key)}/live/${identity}`;
    try {
      await s.call<string>((cb) => client.create(live, Buffer.from(this.o.identity), zookeeper.CreateMode.EPHEMERAL, cb));
    } catch (e) {
      if (!isZookeeperError(e, zookeeper.Exception.NODE_EXISTS)) throw e;
      const stat = await s.call<zookeeper.Stat | undefined>((cb) => client.exists(live, (e2, st) => cb(e2, st ?? undefined)));
      if (!stat?.ephemeralOwner.equals(client.getSessionId())) return 'another live process may run under the same name';
    }
    const [data] = await s.call2<Buffer, zookeeper.Stat>((cb) => client.getData(path, cb));
    const { tick } = parseData(data);
    if (tick > startTick) return `its node was reported at tick ${tick}, past the tick ${startTick} it started after, by another process`;
    return undefined;
  }

  /** Ends this process's `live` node of `identity`, if connected (else the session's expiry ends it). */
  async leave(space: IdSpace, identity: string): Promise<void> {
    const client = this.o.session.currentIfConnected();
    if (!client) return;
    await this.o.session
      .call<void>((cb) => client.remove(`${this.o.root}/${safe(space.key)}/live/${identity}`, -1, (e) => cb(e, undefined)))
      .catch(() => {});
  }

  /** The ephemeral `live` node: refuses while another session (a live process with this identity) holds it. */
  private async guard(client: zookeeper.Client, path: string): Promise<void> {
    const s = this.o.session;
    const until = this.o.mono() + this.o.sessionTimeoutMs + 2000;
    for (;;) {
      try {
        await s.call<string>((cb) => client.create(path, Buffer.from(this.o.identity), zookeeper.CreateMode.EPHEMERAL, cb));
        return;
      } catch (e) {
        if (!isZookeeperError(e, zookeeper.Exception.NODE_EXISTS)) throw unavailable(e);
      }
      const stat = await s.call<zookeeper.Stat | undefined>((cb) => client.exists(path, (e, st) => cb(e, st ?? undefined)));
      if (stat && stat.ephemeralOwner.equals(client.getSessionId())) return;
      if (stat && this.o.mono() >= until) {
        const { message, located: split } = located(
          (w) => `another live process runs as ${w ?? 'this one'} (same host, port and state directory?); it would share the worker id`,
          path.slice(path.lastIndexOf('/') + 1),
        );
        throw new UnavailableError('LEASE_LOST', message, { retryAfterMs: this.o.sessionTimeoutMs, located: split });
      }
      if (stat) await sleep(250);
    }
  }

  private async createSequential(
    client: zookeeper.Client,
    forever: string,
    identity: string,
    space: IdSpace,
  ): Promise<{ workerId: number; path: string } | undefined> {
    const s = this.o.session;
    const data: NodeData = { tick: -1, atMs: this.o.startClock.clock.now(), identity };
    const path = await s.call<string>((cb) =>
      client.create(`${forever}/${identity}-`, Buffer.from(JSON.stringify(data)), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb),
    );
    const id = Number(path.slice(-SEQ_DIGITS));
    if (id < space.workerCount) return { workerId: id, path };
    // Raced past the last id: this node is useless; the id space is full.
    await s.call<void>((cb) => client.remove(path, -1, (e) => cb(e, undefined))).catch(() => {});
    return undefined;
  }

  /** Takes over the node silent the longest, if silent for longer than reclaimAfterMs (ZooKeeper's clock). */
  private async reclaim(v: SpaceView): Promise<{ workerId: number; path: string; tick: number }> {
    const { space } = v;
    const r = this.o.reclaimAfterMs;
    if (r === undefined) {
      throw new UnavailableError(
        'ID_SPACE_EXHAUSTED',
        `every worker id of layout ${space.label} (0..${space.workerCount - 1}) has been handed out in ZooKeeper and ids are never reused; set reclaim-after=SECONDS to reclaim ids of nodes silent that long`,
      );
    }
    const { zkNow, candidates } = await this.silentNodes(v, r);
    for (const c of candidates) {
      const taken = await this.takeOver(v, c, r);
      if (!taken) continue; // reported meanwhile, or taken by another reclaimer
      this.o.startClock.log.warn(
        { layout: space.label, workerId: c.id, from: c.name, silentSeconds: Math.round((zkNow - c.mtime) / 1000), afterTick: taken.tick },
        'zookeeper worker id reclaimed from a silent node',
      );
      return { workerId: c.id, ...taken };
    }
    throw new UnavailableError(
      'ID_SPACE_EXHAUSTED',
      `every worker id of layout ${space.label} is in use and none was silent for more than ${r / 1000} s`,
      {
        retryAfterMs: 10_000,
      },
    );
  }

  /** Other identities' nodes not reported for longer than `r` by ZooKeeper's clock, silent longest first. */
  private async silentNodes({ client, spaceDir, identity, space, exclude, children }: SpaceView, r: number) {
    const s = this.o.session;
    await s.call<string>((cb) => client.mkdirp(`${spaceDir}/clock`, cb));
    const clockStat = await s.call<zookeeper.Stat>((cb) => client.setData(`${spaceDir}/clock`, Buffer.from(identity), -1, cb));
    const zkNow = zkTime(clockStat.mtime);
    const candidates: Silent[] = [];
    for (const name of children) {
      const c = parseChild(name);
      if (!c || c.id >= space.workerCount || exclude.includes(c.id) || c.identity === identity) continue;
      try {
        const [data, stat] = await s.call2<Buffer, zookeeper.Stat>((cb) => client.getData(`${spaceDir}/forever/${name}`, cb));
        const mtime = zkTime(stat.mtime);
        if (zkNow - mtime > r) candidates.push({ id: c.id, name, tick: parseData(data).tick, version: stat.version, mtime });
      } catch {
        // gone meanwhile (another reclaimer): skip
      }
    }
    candidates.sort((a, b) => a.mtime - b.mtime || a.id - b.id);
    return { zkNow, candidates };
  }

  /** Removes the silent node at the version read and creates ours in one transaction; undefined when that version is gone. */
  private async takeOver(
    { client, spaceDir, identity, space }: SpaceView,
    c: Silent,
    r: number,
  ): Promise<{ path: string; tick: number } | undefined> {
    // The old holder stopped issuing before mtime + reclaimAfter − margin by its clock; start after both.
    const epoch = space.epochMs ?? epochFromKey(space.key);
    const tick = Math.max(c.tick, Math.floor((c.mtime + r - epoch) / space.unitMs));
    const path = `${spaceDir}/forever/${identity}-${String(c.id).padStart(SEQ_DIGITS, '0')}`;
    const data: NodeData = { tick, atMs: this.o.startClock.clock.now(), identity };
    try {
      await this.o.session.call<unknown>((cb) =>
        client
          .transaction()
          .remove(`${spaceDir}/forever/${c.name}`, c.version)
          .create(path, Buffer.from(JSON.stringify(data)), zookeeper.CreateMode.PERSISTENT)
          .commit(cb),
      );
    } catch (e) {
      if (isZookeeperError(e, zookeeper.Exception.CONNECTION_LOSS)) throw unavailable(e);
      return undefined;
    }
    return { path, tick };
  }
}

/** Refuses (CLOCK_MOVED_BACKWARDS) when the clock is behind `tick` by more than maxStartWaitMs; waits out a smaller gap. */
/** `source`: what reported the tick (`what`, for a client) and where it is (`where`: a file or a node, the operator's). */
export async function checkStartClock(
  sc: StartClock,
  space: IdSpace,
  tick: number,
  { what, where }: { readonly what: string; readonly where: string },
): Promise<void> {
  const source = `${what} ${where}`;
  if (tick < 0) return;
  const epoch = space.epochMs ?? epochFromKey(space.key);
  const gapMs = epoch + (tick + 1) * space.unitMs - sc.clock.now();
  if (gapMs <= 0) return;
  if (gapMs > sc.maxStartWaitMs) {
    sc.log.error({ layout: space.label, tick, gapMs, source }, 'snowflake start refused: the clock is behind the reported tick');
    const { message, located: split } = located(
      (w) =>
        `the clock is ${gapMs} ms behind the tick reported in ${what}${w ? ` ${w}` : ''} (tick ${tick}); start refused until the clock passes it`,
      where,
    );
    throw new ClockError(message, { retryAfterMs: gapMs, located: split });
  }
  sc.log.warn({ layout: space.label, tick, gapMs, source }, 'clock behind the reported tick at start: waiting');
  await sleep(gapMs);
  if (sc.clock.now() < epoch + (tick + 1) * space.unitMs) {
    const { message, located: split } = located(
      (w) => `the clock is still behind the tick reported in ${what}${w ? ` ${w}` : ''} after waiting ${gapMs} ms; start refused`,
      where,
    );
    throw new ClockError(message, { retryAfterMs: gapMs, located: split });
  }
}

/** Path component for ZooKeeper and file names. */
export function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '_');
}

function parseChild(name: string): Child | undefined {
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
