/**
 * Worker-id leases in etcd (the `etcd://…` worker-id provider), behind the
 * same WorkerLeaseStore port as the SQL stores, so LeaseWorkerIdProvider's
 * fencing (stop issuing a margin before the lease can have expired, measured
 * from when each request was sent), ledger pruning and holder naming apply
 * unchanged. Keys, under the prefix (default /sequoia/snowflake), per id
 * space (URI-encoded):
 *
 *   <prefix>/<space>/lease/<id>    {owner, generation, expiresAtMs}; bound to an etcd lease: exists while held
 *   <prefix>/<space>/tick/<id>     {generation, lastTick, released}; no lease: outlives every holder
 *   <prefix>/ledger/<space>/<id>/<generation>   the holding (kit/lease/holding-ledger.ts), rewritten with each report
 *
 * - A claim is one transaction: the lease key's create revision is 0 (no live
 *   holder; etcd deleted it when the last holder's lease expired or was
 *   revoked) and the tick key is at the revision read, so the new holder's
 *   generation and its `afterTick` (the tick key's lastTick) are the ones the
 *   transaction saw; it writes the lease key bound to a fresh etcd lease, the
 *   tick key and the holding's ledger key.
 * - A renewal is one keepalive round of that etcd lease, then one transaction
 *   that holds only while the lease key is still bound to it: it raises the
 *   tick key's lastTick to the new reservation and the holding's horizon. So
 *   the next holder, which cannot claim before the key is gone, starts after
 *   every tick the holder may issue.
 * - A release deletes the lease key, records the last tick issued and revokes
 *   the etcd lease.
 * etcd counts TTLs in whole seconds on its own monotonic clock; a lease of
 * ttlMs is asked as ceil(ttlMs / 1000) s, never shorter than the holder's
 * deadline. etcd keeps no wall clock a client can read: the ledger's times
 * are this host's.
 */
import { readFileSync } from 'node:fs';
import { Etcd3, type IKeyValue, type IOptions, type IRequestOp, type ICompare } from 'etcd3';
import { InvalidArgumentError, located, UnavailableError } from '../../core/errors.js';
import type { LeaseHolding, LeaseLedgerEntry } from '../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { chooseWorker } from '../kit/lease/choose-worker.js';
import { type HoldingData, holdingEntries, parseHolding } from '../kit/lease/holding-ledger.js';
import { grantRow } from '../kit/lease/lease-ledger-rules.js';
import type { EtcdSpec } from './etcd-spec.js';

interface LeaseValue {
  readonly owner: string;
  readonly generation: number;
  readonly expiresAtMs: number;
}

interface TickValue {
  readonly generation: number;
  readonly lastTick: number;
  readonly released: boolean;
}

const pad = (n: number): string => String(n).padStart(10, '0');

/** The first key after every key starting with `prefix` (etcd's range end of a prefix). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

function json<T>(kv: IKeyValue | undefined): T | undefined {
  if (!kv) return undefined;
  try {
    return JSON.parse(kv.value.toString('utf8')) as T;
  } catch {
    return undefined;
  }
}

const put = (key: string, value: unknown, lease?: string): IRequestOp => ({
  request_put: { key: Buffer.from(key), value: Buffer.from(JSON.stringify(value)), ...(lease ? { lease } : {}) },
});
const modIs = (key: string, kv: IKeyValue | undefined): ICompare => ({
  key: Buffer.from(key),
  target: 'Mod',
  result: 'Equal',
  mod_revision: kv?.mod_revision ?? 0,
});

/** The client options of a spec: TLS from the CA (and client certificate), etcd auth from the user. */
export function etcdClientOptions(spec: EtcdSpec, read: (path: string) => Buffer = readFileSync): IOptions {
  const tls = spec.caFile !== undefined;
  const file = (what: string, path: string): Buffer => {
    try {
      return read(path);
    } catch (e) {
      throw new InvalidArgumentError(`worker id provider etcd: cannot read the ${what} file ${path} (${(e as Error).message})`);
    }
  };
  return {
    hosts: spec.hosts.map((h) => `${tls ? 'https' : 'http'}://${h}`),
    ...(tls
      ? {
          credentials: {
            rootCertificate: file('cacert', spec.caFile as string),
            ...(spec.certFile !== undefined ? { certChain: file('cert', spec.certFile) } : {}),
            ...(spec.keyFile !== undefined ? { privateKey: file('key', spec.keyFile) } : {}),
          },
        }
      : {}),
    ...(spec.user !== undefined ? { auth: { username: spec.user, password: spec.password ?? '' } } : {}),
    dialTimeout: 3000,
  };
}

export interface EtcdWorkerLeaseStoreOptions {
  /** Per request, ms. Default 3000. */
  readonly requestTimeoutMs?: number | undefined;
  readonly now?: (() => number) | undefined;
}

export class EtcdWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'etcd';
  private readonly client: Etcd3;
  private readonly prefix: string;
  private readonly where: string;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(spec: EtcdSpec, o: EtcdWorkerLeaseStoreOptions = {}) {
    this.client = new Etcd3(etcdClientOptions(spec));
    this.prefix = spec.prefix;
    this.where = `etcd ${spec.hosts.join(',')}`;
    this.timeoutMs = o.requestTimeoutMs ?? 3000;
    this.now = o.now ?? Date.now;
  }

  async init(): Promise<void> {}

  private sp = (space: string): string => `${this.prefix}/${encodeURIComponent(space)}`;
  private leaseKey = (space: string, id: number): string => `${this.sp(space)}/lease/${pad(id)}`;
  private tickKey = (space: string, id: number): string => `${this.sp(space)}/tick/${pad(id)}`;
  private ledgerDir = (space: string): string => `${this.prefix}/ledger/${encodeURIComponent(space)}/`;
  private ledgerKey = (space: string, id: number, generation: number): string => `${this.ledgerDir(space)}${pad(id)}/${pad(generation)}`;

  private opts() {
    return { deadline: new Date(Date.now() + this.timeoutMs) };
  }

  /**
   * Runs one etcd call, bounded here too (a gRPC stream may end without an
   * answer or an error); a failure to reach etcd is STORE_UNAVAILABLE naming
   * the members, never the credentials.
   */
  private async call<T>(what: string, f: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        f(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer in ${this.timeoutMs} ms`)), this.timeoutMs + 500);
        }),
      ]);
    } catch (e) {
      if (e instanceof InvalidArgumentError || e instanceof UnavailableError) throw e;
      // The driver's words name hosts and ports: the operator's, with the cluster's.
      throw this.unavailable((at) => `${at ?? 'etcd'} did not answer ${what}${at ? ` (${(e as Error).message ?? String(e)})` : ''}`, e);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Several keys and prefixes read at one revision (a read-only transaction). */
  private async read(what: string, keys: readonly string[], prefixes: readonly string[] = []): Promise<IKeyValue[][]> {
    const success: IRequestOp[] = [
      ...keys.map((k) => ({ request_range: { key: Buffer.from(k) } })),
      ...prefixes.map((p) => ({ request_range: { key: Buffer.from(p), range_end: prefixEnd(Buffer.from(p)) } })),
    ];
    const r = await this.call(what, () => this.client.kv.txn({ compare: [], success, failure: [] }, this.opts()));
    return r.responses.map((x) => x.response_range.kvs);
  }

  private async txn(what: string, compare: ICompare[], success: IRequestOp[]): Promise<boolean> {
    const r = await this.call(what, () => this.client.kv.txn({ compare, success, failure: [] }, this.opts()));
    return r.succeeded;
  }

  private async grantLease(ttlMs: number): Promise<string> {
    const r = await this.call('a lease grant', () => this.client.leaseClient.leaseGrant({ TTL: Math.ceil(ttlMs / 1000) }, this.opts()));
    if (r.error) throw this.unavailable((at) => `${at ?? 'etcd'} refused a lease: ${r.error}`);
    return r.ID;
  }

  /** STORE_UNAVAILABLE whose message names the cluster (`say(this.where)`) to the operator; a client reads `say(undefined)`. */
  private unavailable(say: (at: string | undefined) => string, cause?: unknown): UnavailableError {
    const { message, located: split } = located(say, this.where);
    return new UnavailableError('STORE_UNAVAILABLE', message, { cause, retryAfterMs: 1000, located: split });
  }

  private revoke(id: string): void {
    if (id === '0' || id === '') return;
    // Best effort: a lease not revoked expires on its own.
    void this.client.leaseClient.leaseRevoke({ ID: id }, this.opts()).catch(() => {});
  }

  /** One keepalive round of lease `id`; false when etcd no longer has it (expired or revoked). */
  private async keepalive(id: string): Promise<boolean> {
    return this.call('a lease keepalive', async () => {
      const stream = await this.client.leaseClient.leaseKeepAlive(this.opts());
      try {
        const res = await new Promise<{ TTL: string }>((resolve, reject) => {
          stream.on('data', resolve);
          stream.on('error', reject);
          stream.on('end', () => reject(new Error('the keepalive stream ended without an answer')));
          stream.write({ ID: id });
        });
        return Number(res.TTL) > 0;
      } finally {
        stream.end();
      }
    });
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { readonly refused: string }> {
    const s = req.space;
    // A lost race (another claim between the read and the transaction) reads again: each round one racer wins.
    for (let attempt = 0; attempt < 4 * Math.min(req.workerCount, 64); attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 20));
      const [leaseKvs = [], tickKvs = []] = await this.read('a lease read', [], [`${this.sp(s)}/lease/`, `${this.sp(s)}/tick/`]);
      const idOf = (kv: IKeyValue): number => Number(kv.key.toString('utf8').slice(kv.key.toString('utf8').lastIndexOf('/') + 1));
      const leases = new Map(leaseKvs.map((kv) => [idOf(kv), kv]));
      const ticks = new Map(tickKvs.map((kv) => [idOf(kv), kv]));
      const nowMs = this.now();
      const rows: LeaseRow[] = [];
      for (const [id, kv] of leases) {
        const v = json<LeaseValue>(kv);
        // The key exists only while etcd keeps its lease: live, whatever time it says.
        rows.push({ workerId: id, owner: v?.owner ?? '?', expiresAtMs: Math.max(v?.expiresAtMs ?? 0, nowMs + 1) });
      }
      for (const [id, kv] of ticks) {
        if (leases.has(id)) continue;
        // Gone from etcd: released (0, a grant) or run out unreleased (a takeover).
        rows.push({ workerId: id, owner: '', expiresAtMs: json<TickValue>(kv)?.released === false ? 1 : 0 });
      }
      const choice = chooseWorker(rows, nowMs, req);
      if ('refused' in choice) return choice;
      const id = choice.workerId;
      const leaseKv = leases.get(id);
      const tickKv = ticks.get(id);
      const tick = json<TickValue>(tickKv);
      const generation = Math.max(tick?.generation ?? 0, json<LeaseValue>(leaseKv)?.generation ?? 0) + 1;
      const lastTick = tick?.lastTick ?? -1;
      const row = grantRow(req, id, { generation, lastTick }, rows);
      const leaseId = await this.grantLease(req.ttlMs);
      const expiresAtMs = nowMs + req.ttlMs;
      const holding: HoldingData = {
        workerId: id,
        began: row.kind === 'takeover' ? 'takeover' : 'grant',
        owner: req.owner,
        holder: row.holder,
        fromTick: row.fromTick,
        untilTick: row.untilTick,
        released: false,
        firstAtMs: nowMs,
        lastAtMs: nowMs,
      };
      const lk = this.leaseKey(s, id);
      const ok = await this.txn(
        'a claim',
        [
          // No live holder (the same owner taking its own id again replaces its lease at the revision read).
          leaseKv ? modIs(lk, leaseKv) : { key: Buffer.from(lk), target: 'Create', result: 'Equal', create_revision: 0 },
          modIs(this.tickKey(s, id), tickKv),
        ],
        [
          put(lk, { owner: req.owner, generation, expiresAtMs } satisfies LeaseValue, leaseId),
          put(this.tickKey(s, id), { generation, lastTick, released: false } satisfies TickValue),
          put(this.ledgerKey(s, id, generation), holding),
        ],
      ).catch((e: unknown) => {
        this.revoke(leaseId);
        throw e;
      });
      if (ok) {
        if (leaseKv) this.revoke(leaseKv.lease);
        return { workerId: id, generation, lastTick, expiresAtMs };
      }
      this.revoke(leaseId);
    }
    return { refused: 'other processes kept claiming ids in this space at the same moment' };
  }

  /** The lease key, tick key and holding of a held lease, read at one revision; undefined when it changed hands. */
  private async held(lease: HeldLease) {
    const keys = [
      this.leaseKey(lease.space, lease.workerId),
      this.tickKey(lease.space, lease.workerId),
      this.ledgerKey(lease.space, lease.workerId, lease.generation),
    ] as const;
    const [[leaseKv] = [], [tickKv] = [], [ledgerKv] = []] = await this.read('a lease read', keys);
    const v = json<LeaseValue>(leaseKv);
    if (!leaseKv || !v || v.owner !== lease.owner || v.generation !== lease.generation) return undefined;
    const h = parseHolding(lease.workerId, lease.generation, ledgerKv?.value);
    return { keys, leaseKv, tickKv, tick: json<TickValue>(tickKv), holding: h };
  }

  async renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const h = await this.held(lease);
    if (!h || !(await this.keepalive(h.leaseKv.lease))) return undefined;
    const nowMs = this.now();
    const tick = Math.max(h.tick?.lastTick ?? -1, lastTick);
    const [lk, tk, gk] = h.keys;
    const ok = await this.txn(
      'a renewal',
      [{ key: Buffer.from(lk), target: 'Lease', result: 'Equal', lease: h.leaseKv.lease }, modIs(lk, h.leaseKv), modIs(tk, h.tickKv)],
      [
        put(lk, { owner: lease.owner, generation: lease.generation, expiresAtMs: nowMs + ttlMs } satisfies LeaseValue, h.leaseKv.lease),
        put(tk, { generation: lease.generation, lastTick: tick, released: false } satisfies TickValue),
        ...(h.holding ? [put(gk, toData(h.holding, Math.max(h.holding.untilTick, lastTick), false, nowMs))] : []),
      ],
    );
    return ok ? { workerId: lease.workerId, generation: lease.generation, lastTick: tick, expiresAtMs: nowMs + ttlMs } : undefined;
  }

  async release(lease: HeldLease, lastTick: number): Promise<void> {
    const h = await this.held(lease);
    if (!h) return;
    const [lk, tk, gk] = h.keys;
    const ok = await this.txn(
      'a release',
      [modIs(lk, h.leaseKv), modIs(tk, h.tickKv)],
      [
        { request_delete_range: { key: Buffer.from(lk) } },
        put(tk, { generation: lease.generation, lastTick, released: true } satisfies TickValue),
        ...(h.holding ? [put(gk, toData(h.holding, lastTick, true, this.now()))] : []),
      ],
    );
    if (ok) this.revoke(h.leaseKv.lease);
  }

  async registerNode(): Promise<NodeClaim> {
    throw new InvalidArgumentError('worker-node ids are kept in an SQL table, not in etcd: use the etcd provider as a lease');
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const dir = workerId === undefined ? this.ledgerDir(space) : `${this.ledgerDir(space)}${pad(workerId)}/`;
    const [kvs = []] = await this.read('a ledger read', [], [dir]);
    const out: LeaseHolding[] = [];
    for (const kv of kvs) {
      const m = /([0-9]{10})\/([0-9]{10})$/.exec(kv.key.toString('utf8'));
      const h = m && parseHolding(Number(m[1]), Number(m[2]), kv.value);
      if (h) out.push(h);
    }
    return out.sort((a, b) => a.workerId - b.workerId || a.generation - b.generation);
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    return holdingEntries(space, await this.holdings(space, workerId));
  }

  /** Holdings not written for `retentionMs` (a live one is rewritten every renewal), each at the revision read. */
  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    const [kvs = []] = await this.read('a ledger read', [], [`${this.prefix}/ledger/`]);
    const cutoff = this.now() - retentionMs;
    let gone = 0;
    for (const kv of kvs) {
      if (gone >= limit) break;
      const last = json<HoldingData>(kv)?.lastAtMs;
      if (last === undefined || last >= cutoff) continue;
      const key = kv.key.toString('utf8');
      if (await this.txn('a ledger prune', [modIs(key, kv)], [{ request_delete_range: { key: kv.key } }])) gone++;
    }
    return gone;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}

function toData(h: LeaseHolding, untilTick: number, released: boolean, atMs: number): HoldingData {
  return {
    workerId: h.workerId,
    began: h.began ?? 'grant',
    owner: h.owner,
    holder: h.holder,
    fromTick: h.fromTick,
    untilTick,
    released,
    firstAtMs: h.firstAtMs,
    lastAtMs: atMs,
  };
}
