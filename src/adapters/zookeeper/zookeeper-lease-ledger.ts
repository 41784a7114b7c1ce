/**
 * The zookeeper provider's lease ledger (ports/lease-ledger.ts), kept in its
 * own tree beside the claim nodes, one persistent node per holding:
 *
 *   <root>/<space>/ledger/w0000000007-0000000003   data: HoldingData (JSON)
 *
 * The node is created before the holder issues its first ID, rewritten in the
 * same multi-op as each tick report (so its until tick is never behind a
 * reservation the generator may use), and marked released at a clean stop.
 * Its sequential suffix is the holding's generation. A holding whose node was
 * not written for the retention period is pruned (the node's mtime, ZooKeeper's
 * clock); a live holding is rewritten every report, so it is never pruned.
 */
import zookeeper from 'node-zookeeper-client';
import type { LeaseHolder, LeaseHolding, LeaseLedger, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import { safe } from './zookeeper-claim.js';
import { ZookeeperSession, isZookeeperError, unavailable } from './zookeeper-session.js';

/** What a holding's ledger node holds. */
export interface HoldingData {
  readonly workerId: number;
  readonly began: 'grant' | 'takeover';
  readonly owner: string;
  readonly holder: LeaseHolder;
  readonly fromTick: number;
  untilTick: number;
  released: boolean;
  readonly firstAtMs: number;
  lastAtMs: number;
}

/** A holding this process writes: its node and what it last wrote there. */
export interface LedgerRecord {
  readonly path: string;
  readonly data: HoldingData;
}

const NAME = /^w([0-9]{10})-([0-9]{10})$/;

export const ledgerDir = (root: string, spaceKey: string): string => `${root}/${safe(spaceKey)}/ledger`;

/** Creates the node of a new holding (before its first ID is issued). */
export async function openHolding(
  session: ZookeeperSession,
  client: zookeeper.Client,
  dir: string,
  data: HoldingData,
): Promise<LedgerRecord> {
  try {
    await session.call<string>((cb) => client.mkdirp(dir, cb));
    const prefix = `${dir}/w${String(data.workerId).padStart(10, '0')}-`;
    const path = await session.call<string>((cb) =>
      client.create(prefix, Buffer.from(JSON.stringify(data)), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb),
    );
    return { path, data };
  } catch (e) {
    throw unavailable(e);
  }
}

export const holdingBytes = (r: LedgerRecord): Buffer => Buffer.from(JSON.stringify(r.data));

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

/** The prune a provider runs after taking an id: its space's old holdings, a batch at a time, never failing the grant. */
export async function pruneSpace(
  session: ZookeeperSession,
  client: zookeeper.Client,
  dir: string,
  nowMs: number,
  retentionMs: number,
): Promise<number> {
  if (retentionMs <= 0) return 0;
  return pruneDir(session, client, dir, nowMs, retentionMs, 500).catch(() => 0);
}

async function childrenOf(session: ZookeeperSession, client: zookeeper.Client, path: string): Promise<string[]> {
  try {
    return await session.call<string[]>((cb) => client.getChildren(path, cb));
  } catch (e) {
    if (isZookeeperError(e, zookeeper.Exception.NO_NODE)) return [];
    throw unavailable(e);
  }
}

function parseHolding(workerId: number, generation: number, b: Buffer | undefined): LeaseHolding | undefined {
  try {
    const d = JSON.parse(b?.toString('utf8') ?? '') as HoldingData;
    if (d.workerId !== workerId || !Number.isSafeInteger(d.fromTick) || !Number.isSafeInteger(d.untilTick)) return undefined;
    return {
      workerId,
      generation,
      began: d.began,
      owner: d.owner,
      holder: d.holder,
      fromTick: d.fromTick,
      untilTick: d.untilTick,
      released: d.released === true,
      firstAtMs: d.firstAtMs,
      lastAtMs: d.lastAtMs,
    };
  } catch {
    return undefined;
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
    if (!c) throw unavailable(new Error(`ZooKeeper ${this.session.connect} is unreachable`));
    return c;
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const client = await this.client();
    const dir = ledgerDir(this.root, space);
    const out: LeaseHolding[] = [];
    for (const name of await childrenOf(this.session, client, dir)) {
      const m = NAME.exec(name);
      if (!m || (workerId !== undefined && Number(m[1]) !== workerId)) continue;
      const data = await this.session
        .call2<Buffer, zookeeper.Stat>((cb) => client.getData(`${dir}/${name}`, cb))
        .then(([d]) => d)
        .catch((e: unknown) => {
          if (isZookeeperError(e, zookeeper.Exception.NO_NODE)) return undefined; // pruned meanwhile
          throw unavailable(e);
        });
      const h = data && parseHolding(Number(m[1]), Number(m[2]), data);
      if (h) out.push(h);
    }
    return out.sort((a, b) => a.workerId - b.workerId || a.generation - b.generation);
  }

  /** A node keeps the holding, not each report: its start, and its latest horizon or release. */
  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    const out: LeaseLedgerEntry[] = [];
    for (const h of await this.holdings(space, workerId)) {
      const base = { space, workerId, generation: h.generation, owner: h.owner, holder: h.holder, fromTick: h.fromTick };
      out.push({ ...base, kind: h.began ?? 'grant', untilTick: h.fromTick - 1, atMs: h.firstAtMs });
      if (h.released || h.untilTick >= h.fromTick)
        out.push({ ...base, kind: h.released ? 'release' : 'renew', untilTick: h.untilTick, atMs: h.lastAtMs });
    }
    return out;
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
