/**
 * The zookeeper providers' lease ledger (ports/lease-ledger.ts), kept in a
 * tree of its own, one persistent node per holding:
 *
 *   <ledger root>/<space>/ledger/w0000000007-0000000003   data: HoldingData (JSON)
 *
 * The ledger root is the `zookeeper` provider's root (beside its claim nodes),
 * and for `?leaf=NAME` Sequoia's `/sequoia/leaf/NAME` (zookeeper-spec.ts:
 * never inside Leaf's `/snowflake/NAME`, which Leaf servers read).
 * The node is created before the holder issues its first ID, rewritten in the
 * same multi-op as each tick report (so its until tick is never behind the
 * reservation reported), and marked released at a clean stop. Its sequential
 * suffix is the holding's generation. A holding whose node was not written for
 * the retention period is pruned (the node's mtime, ZooKeeper's clock); a live
 * holding is rewritten every report, so it is never pruned.
 */
import { randomBytes } from 'node:crypto';
import zookeeper from 'node-zookeeper-client';
import type { Clock } from '../../core/clock.js';
import type { LeaseHolder, LeaseHolding, LeaseLedger, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import { type HoldingData, holdingEntries, parseHolding } from '../kit/lease/holding-ledger.js';
import { safe } from './zookeeper-claim.js';
import { ZookeeperSession, isZookeeperError, unavailable, zookeeperAt } from './zookeeper-session.js';

/** A holding this process writes: its node and what it last wrote there. */
export interface LedgerRecord {
  readonly path: string;
  readonly data: HoldingData;
}

const NAME = /^w([0-9]{10})-([0-9]{10})$/;

const ledgerDir = (root: string, spaceKey: string): string => `${root}/${safe(spaceKey)}/ledger`;

/**
 * Removes at most `limit` holding nodes of `dir` not written for `retentionMs`
 * (ZooKeeper's mtime against `nowMs`); how many went.
 */
async function pruneDir(
  session: ZookeeperSession,
  client: zookeeper.Client,
  dir: string,
  nowMs: number,
  retentionMs: number,
  limit: number,
) {
  let gone = 0;
  for (const name of await childrenOf(session, client, dir)) {
    if (gone >= limit) break;
    if (!NAME.test(name)) continue;
    const stat = await session.call<zookeeper.Stat | undefined>((cb) => client.exists(`${dir}/${name}`, (e, st) => cb(e, st ?? undefined)));
    if (!stat || nowMs - Number(stat.mtime.readBigInt64BE(0)) <= retentionMs) continue;
    // At the version read: a holding written meanwhile stays.
    const removed = await session
      .call<void>((cb) => client.remove(`${dir}/${name}`, stat.version, (e) => cb(e, undefined)))
      .then(() => true)
      .catch(() => false);
    if (removed) gone++;
  }
  return gone;
}

async function childrenOf(session: ZookeeperSession, client: zookeeper.Client, path: string): Promise<string[]> {
  try {
    return await session.call<string[]>((cb) => client.getChildren(path, cb));
  } catch (e) {
    if (isZookeeperError(e, zookeeper.Exception.NO_NODE)) return [];
    throw unavailable(e);
  }
}

/** The holding of node `name` of `dir`; undefined when it is not one or was pruned meanwhile. */
async function readHolding(
  session: ZookeeperSession,
  client: zookeeper.Client,
  dir: string,
  name: string,
): Promise<LeaseHolding | undefined> {
  const m = NAME.exec(name);
  if (!m) return undefined;
  const data = await session
    .call2<Buffer, zookeeper.Stat>((cb) => client.getData(`${dir}/${name}`, cb))
    .then(([d]) => d)
    .catch((e: unknown) => {
      if (isZookeeperError(e, zookeeper.Exception.NO_NODE)) return undefined;
      throw unavailable(e);
    });
  return data && parseHolding(Number(m[1]), Number(m[2]), data);
}

/** A provider's side of the ledger: its holdings' nodes, written with its reports, and the prune of old ones. */
export class HoldingWriter {
  /** This process, with an instance fixed at its start: a restart is a new holding. */
  readonly holder: LeaseHolder;

  /**
   * `place`: the ledger root (holdings go to `<root>/<space>/ledger/`), the
   * holdings' owner (the provider's node identity) and the holder's `host:port`;
   * `retentionMs`: how long a holding not written since is kept (0: for ever).
   */
  constructor(
    private readonly session: ZookeeperSession,
    private readonly clock: Clock,
    private readonly place: { readonly root: string; readonly owner: string; readonly host: string },
    version = '',
    private readonly retentionMs = 90 * 86_400_000,
  ) {
    this.holder = { host: place.host, pid: process.pid, instance: randomBytes(6).toString('hex'), version };
  }

  /**
   * Creates the node of a new holding from `fromTick` (before its first ID is
   * issued: a holding the ledger misses would make its IDs look foreign), then
   * prunes the space's old holdings in the background, never failing the grant.
   */
  async open(
    client: zookeeper.Client,
    spaceKey: string,
    workerId: number,
    began: 'grant' | 'takeover',
    fromTick: number,
  ): Promise<LedgerRecord> {
    const s = this.session;
    const dir = ledgerDir(this.place.root, spaceKey);
    const now = this.clock.now();
    const data: HoldingData = {
      workerId,
      began,
      owner: this.place.owner,
      holder: this.holder,
      fromTick,
      untilTick: fromTick - 1,
      released: false,
      firstAtMs: now,
      lastAtMs: now,
    };
    let path: string;
    try {
      await s.call<string>((cb) => client.mkdirp(dir, cb));
      const prefix = `${dir}/w${String(workerId).padStart(10, '0')}-`;
      path = await s.call<string>((cb) =>
        client.create(prefix, Buffer.from(JSON.stringify(data)), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb),
      );
    } catch (e) {
      throw unavailable(e);
    }
    if (this.retentionMs > 0) void pruneDir(s, client, dir, now, this.retentionMs, 500).catch(() => 0);
    return { path, data };
  }

  /** The latest holding of `workerId` still in the space's ledger. */
  async latest(client: zookeeper.Client, spaceKey: string, workerId: number): Promise<LeaseHolding | undefined> {
    const dir = ledgerDir(this.place.root, spaceKey);
    const prefix = `w${String(workerId).padStart(10, '0')}-`;
    const names = (await childrenOf(this.session, client, dir)).filter((n) => n.startsWith(prefix) && NAME.test(n)).sort();
    for (const name of names.reverse()) {
      const h = await readHolding(this.session, client, dir, name);
      if (h) return h;
    }
    return undefined;
  }

  /**
   * Writes the claim node's `data` and the holding's horizon, raised to
   * `untilTick`, in one multi-op: the ledger never trails a reported tick.
   */
  async report(client: zookeeper.Client, node: string, data: Buffer, rec: LedgerRecord, untilTick: number, atMs: number): Promise<void> {
    rec.data.untilTick = Math.max(rec.data.untilTick, untilTick);
    rec.data.lastAtMs = atMs;
    const holding = Buffer.from(JSON.stringify(rec.data));
    await this.session.call<unknown>((cb) => client.transaction().setData(node, data, -1).setData(rec.path, holding, -1).commit(cb));
  }
}

/** The ledger read back, for `sequoia explain --store zookeeper:…` and `sequoia audit`. */
export class ZookeeperLeaseLedger implements LeaseLedger {
  private readonly session: ZookeeperSession;

  /** `connect`: `host:port[,host:port…]`; `root`: the provider's root. */
  constructor(
    connect: string,
    private readonly root: string,
    private readonly connectTimeoutMs = 3000,
  ) {
    this.session = new ZookeeperSession({ connect, sessionTimeoutMs: 6000, requestTimeoutMs: 3000 });
  }

  private async client(): Promise<zookeeper.Client> {
    const c = await this.session.connected(this.connectTimeoutMs);
    if (!c) throw zookeeperAt(this.session.connect, (zk) => `${zk ?? 'ZooKeeper'} is unreachable`, { retryAfterMs: 1000 });
    return c;
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const client = await this.client();
    const dir = ledgerDir(this.root, space);
    const out: LeaseHolding[] = [];
    for (const name of await childrenOf(this.session, client, dir)) {
      const m = NAME.exec(name);
      if (!m || (workerId !== undefined && Number(m[1]) !== workerId)) continue;
      const h = await readHolding(this.session, client, dir, name);
      if (h) out.push(h);
    }
    return out.sort((a, b) => a.workerId - b.workerId || a.generation - b.generation);
  }

  /** A node keeps the holding, not each report (holding-ledger.ts). */
  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return holdingEntries(space, await this.holdings(space, workerId));
  }

  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    const client = await this.client();
    const now = Date.now();
    let gone = 0;
    for (const space of await childrenOf(this.session, client, this.root)) {
      if (gone >= limit) break;
      gone += await pruneDir(this.session, client, `${this.root}/${space}/ledger`, now, retentionMs, limit - gone);
    }
    return gone;
  }

  async close(): Promise<void> {
    this.session.close();
  }
}
