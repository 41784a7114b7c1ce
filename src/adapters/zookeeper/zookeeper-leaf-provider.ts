/**
 * `zookeeper:…?leaf=NAME`: worker ids in Leaf-snowflake's own ZooKeeper tree,
 * beside Leaf servers, as Leaf's SnowflakeZookeeperHolder takes them
 * (Meituan-Dianping/Leaf, leaf-core):
 *
 *   /snowflake/NAME/forever/{ip}:{port}-0000000007   persistent sequential; worker id 7
 *   data: {"ip":"…","port":"…","timestamp":<ms>}     (Jackson's Endpoint: port a string)
 *
 * - The worker id is the sequential node's number; ZooKeeper numbers the
 *   children of one parent uniquely, so a Leaf server and a Sequoia server
 *   starting together never share an id, and Leaf never reuses one.
 * - A restart of the same {ip}:{port} finds its node (Leaf splits each child
 *   name at `-`) and keeps its id; it is refused while the node's timestamp is
 *   ahead of the local clock (Leaf's checkInitTimeStamp); a gap of up to two
 *   reports and 2 s (what a crash leaves reserved) is waited out first.
 * - Every 3 s the node's data is written again (Leaf's ScheduledUploadData).
 *   Sequoia writes the end of the ticks it has reserved rather than "now":
 *   the same JSON, never below Leaf's value, so a restart is refused while
 *   the clock is behind anything this holder may have issued. On a clean stop
 *   it writes the last tick actually issued.
 * Nothing else is added to Leaf's tree. Unlike Leaf, no id is read from a
 * local file when ZooKeeper is down (the start retries), and an id past the
 * layout's worker ids is refused, as Leaf's SnowflakeIDGenImpl refuses it.
 *
 * The lease ledger (zookeeper-lease-ledger.ts) is kept outside Leaf's tree,
 * in Sequoia's own path, one node per holding:
 *
 *   /sequoia/leaf/NAME/<space>/ledger/w0000000007-0000000003
 *
 * Opened before the first ID (a grant for a new node or after a clean stop;
 * a takeover when the {ip}:{port}'s last holding was not released: a crash,
 * or a Leaf server before it), its horizon written in the same multi-op as
 * each 3-second report (the ticks reserved, not the timestamp), released with
 * the last tick issued at a clean stop. While ZooKeeper is unreachable the
 * holder goes on issuing, as Leaf's do: the next report that reaches it moves
 * the horizon over every tick reserved meanwhile.
 */
import { networkInterfaces } from 'node:os';
import zookeeper from 'node-zookeeper-client';
import { ClockError, InvalidArgumentError, located, UnavailableError } from '../../core/errors.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';
import type { LedgerRecord } from './zookeeper-lease-ledger.js';
import { ZookeeperProviderBase, type ZookeeperProviderOptions } from './zookeeper-provider-base.js';
import { unavailable, zookeeperAt } from './zookeeper-session.js';
import { LEAF_IDENTITY, leafLedgerRoot } from './zookeeper-spec.js';

/** `identity`: `{ip}:{port}`, default the first external IPv4 address and `port`, as Leaf's Utils.getIp(). */
export interface LeafZookeeperOptions extends ZookeeperProviderOptions {
  /** Leaf's `leaf.name`. */
  readonly leafName: string;
}

/** Leaf's node data. */
export interface LeafEndpoint {
  readonly ip: string;
  readonly port: string;
  readonly timestamp: number;
}

interface Held {
  readonly path: string;
  readonly workerId: number;
  readonly ledger: LedgerRecord;
}

/** Renewals carry the 3-second reports; the grant itself never expires (Leaf's holders never stop). */
export class LeafZookeeperWorkerIdProvider extends ZookeeperProviderBase implements WorkerIdProvider {
  readonly kind = 'zookeeper(leaf)';
  readonly forever: string;
  private readonly ip: string;
  private readonly port: string;
  private readonly held = new Map<string, Held>();

  constructor(o: LeafZookeeperOptions) {
    if (o.identity === undefined && !o.port) {
      throw new InvalidArgumentError(
        'zookeeper leaf=NAME names its node {ip}:{port} as Leaf does: the server needs a fixed --port, or give ?node=IP:PORT',
      );
    }
    const identity = o.identity ?? `${localIp()}:${o.port}`;
    if (!LEAF_IDENTITY.test(identity))
      throw new InvalidArgumentError(`zookeeper leaf node name ${JSON.stringify(identity)} must be IP:PORT (Leaf splits names at -)`);
    super(o, identity, { root: leafLedgerRoot(o.leafName), host: identity });
    const colon = identity.lastIndexOf(':');
    this.ip = identity.slice(0, colon);
    this.port = identity.slice(colon + 1);
    this.forever = `/snowflake/${o.leafName}/forever`;
  }

  async acquire(space: IdSpace, exclude: readonly number[] = []): Promise<WorkerGrant> {
    if (exclude.length > 0)
      throw new InvalidArgumentError(
        'zookeeper leaf=NAME holds one worker id per {ip}:{port}, as Leaf: no backup worker id (use another clock policy)',
      );
    const client = await this.session.connected(this.connectTimeoutMs);
    if (!client)
      throw zookeeperAt(this.session.connect, (zk) => `${zk ?? 'ZooKeeper'} is unreachable; a start in leaf mode needs it`, {
        retryAfterMs: 1000,
      });
    // The holder's clock at the grant, read before the claim: its first ID is at or after it.
    const grantTick = tickOf(space, this.clock.now());
    const { path, afterTick, how } = await this.claimNode(client, space);
    const workerId = Number(path.slice(path.lastIndexOf('-') + 1));
    if (workerId >= space.workerCount) {
      const { message, located: split } = located(
        (w) =>
          `Leaf node${w ? ` ${w}` : ''} has worker id ${workerId}, beyond layout ${space.label}'s worker ids 0..${space.workerCount - 1} (Leaf refuses it too; ids are never reused)`,
        path,
      );
      throw new UnavailableError('ID_SPACE_EXHAUSTED', message, { located: split });
    }
    // A restart after its last holding went unreleased (a crash) takes that holding over.
    const last = how === 'new sequential node' ? undefined : await this.ledger.latest(client, space.key, workerId);
    const began = last !== undefined && !last.released ? 'takeover' : 'grant';
    const ledger = await this.ledger.open(client, space.key, workerId, began, Math.max(afterTick + 1, grantTick));
    this.held.set(space.key, { path, workerId, ledger });
    this.log.info({ layout: space.label, workerId, afterTick, node: path, how, ledger: ledger.path }, 'zookeeper (leaf) worker id taken');
    return { workerId, generation: 1, afterTick, validUntil: Number.POSITIVE_INFINITY };
  }

  /**
   * Leaf's node of this {ip}:{port}: its own sequential node when it has one
   * (a restart, after the clock passed the node's timestamp, waited out up to
   * maxStartWaitMs), else a new one.
   */
  private async claimNode(client: zookeeper.Client, space: IdSpace): Promise<{ path: string; afterTick: number; how: string }> {
    const s = this.session;
    let path: string;
    let afterTick = -1;
    let how: string;
    try {
      const exists = await s.call<zookeeper.Stat | undefined>((cb) => client.exists(this.forever, (e, st) => cb(e, st ?? undefined)));
      const children = exists ? await s.call<string[]>((cb) => client.getChildren(this.forever, cb)) : [];
      // Leaf: key.split("-") → [ip:port, sequence]
      const mine = children
        .map((name) => ({ name, parts: name.split('-') }))
        .filter((c) => c.parts[0] === this.identity && /^[0-9]+$/.test(c.parts[1] ?? ''))
        .sort((a, b) => Number(a.parts[1]) - Number(b.parts[1]))[0];
      if (mine) {
        path = `${this.forever}/${mine.name}`;
        const data = await s.call2<Buffer, zookeeper.Stat>((cb) => client.getData(path, cb));
        const ts = parseEndpoint(data[0])?.timestamp ?? 0;
        let now = this.clock.now();
        // A crash leaves a reservation up to two reports ahead: waited out; more is the clock (Leaf's refusal).
        if (ts > now && ts - now <= this.maxStartWaitMs) {
          this.log.warn({ layout: space.label, node: path, gapMs: ts - now }, 'clock behind the Leaf node timestamp at start: waiting');
          await new Promise((r) => setTimeout(r, ts - now + 1));
          now = this.clock.now();
        }
        if (ts > now) {
          this.log.error(
            { layout: space.label, node: path, timestamp: ts, now },
            'snowflake start refused: the clock is behind the Leaf node timestamp',
          );
          const gap = ts - now;
          const { message, located: split } = located(
            (w) =>
              `the clock is ${gap} ms behind the timestamp of Leaf node${w ? ` ${w}` : ''}; start refused until the clock passes it (Leaf's check)`,
            path,
          );
          throw new ClockError(message, { retryAfterMs: gap, located: split });
        }
        afterTick = tickOf(space, ts);
        how = 'restart: own node';
      } else {
        await s.call<string>((cb) => client.mkdirp(this.forever, cb));
        path = await s.call<string>((cb) =>
          client.create(`${this.forever}/${this.identity}-`, this.data(this.clock.now()), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb),
        );
        how = 'new sequential node';
      }
    } catch (e) {
      if (e instanceof ClockError || e instanceof UnavailableError) throw e;
      throw unavailable(e);
    }
    return { path, afterTick, how };
  }

  async renew(space: IdSpace, grant: WorkerGrant, ceilingTick: number): Promise<WorkerGrant> {
    await this.report(space, Math.max(this.clock.now(), tickEndMs(space, ceilingTick)), ceilingTick);
    return grant;
  }

  async release(space: IdSpace, _grant: WorkerGrant, lastTick: number): Promise<void> {
    const h = this.held.get(space.key);
    if (h) h.ledger.data.released = true;
    await this.report(space, lastTick < 0 ? this.clock.now() : tickEndMs(space, lastTick), lastTick).catch(() => {});
    this.held.delete(space.key);
  }

  private data(timestamp: number): Buffer {
    const e: LeafEndpoint = { ip: this.ip, port: this.port, timestamp };
    return Buffer.from(JSON.stringify(e));
  }

  /**
   * Leaf's updateNewData, with the holding's horizon raised to `untilTick` in
   * the same multi-op; a failure is logged and the holder goes on (Leaf's
   * holders never stop).
   */
  private async report(space: IdSpace, timestamp: number, untilTick: number): Promise<void> {
    const h = this.held.get(space.key);
    const client = this.session.connectedNow();
    if (!h || !client) return;
    try {
      await this.ledger.report(client, h.path, this.data(timestamp), h.ledger, untilTick, this.clock.now());
    } catch (e) {
      this.log.warn(
        { layout: space.label, node: h.path, err: e instanceof Error ? e.message : String(e) },
        'zookeeper (leaf) timestamp report failed',
      );
    }
  }
}

function tickOf(space: IdSpace, ms: number): number {
  return Math.floor((ms - (space.epochMs ?? 0)) / space.unitMs);
}

/** The last ms of `tick`: the holder may have issued in it until then. */
function tickEndMs(space: IdSpace, tick: number): number {
  return (space.epochMs ?? 0) + (tick + 1) * space.unitMs - 1;
}

function parseEndpoint(b: Buffer | undefined): LeafEndpoint | undefined {
  try {
    const d = JSON.parse(b?.toString('utf8') ?? '') as Partial<LeafEndpoint>;
    return typeof d.timestamp === 'number' ? (d as LeafEndpoint) : undefined;
  } catch {
    return undefined;
  }
}

/** Leaf's Utils.getIp(): the first IPv4 address that is not a loopback one. */
function localIp(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
