/**
 * Worker-id leases on Redis (a single primary, as the segment store).
 *
 * Layout under `leasePrefix` (default `sequoia:lease:`):
 * - `rows:<space>`: a hash, one field per worker id, its value
 *   `generation|expires_at|last_tick|owner` (decimal strings);
 * - `ledger:<space>:<worker id>`: the lease ledger of that id, a stream
 *   (an entry's id starts with Redis's own ms clock: its `atMs`);
 * - `nodes`: the worker-node counter (one for every space, as the SQL stores' node table).
 *
 * Time: expiry is judged by Redis's clock (`TIME` inside the scripts), one
 * clock for every holder whatever machine it runs on, as PostgreSQL's
 * `clock_timestamp()` is for its store. Scripts call
 * `redis.replicate_commands()` first, so TIME followed by writes works on
 * Redis 3.2–6 too (7 replicates effects only).
 *
 * Atomicity: every write is one Lua script that writes the lease row and its
 * ledger entry together. Which id to take is chosen by the rules every store
 * shares (choose-worker.ts) on a snapshot of the space's rows and Redis's
 * clock; the take is then a compare-and-set on that id's row as the snapshot
 * saw it, retried on a fresh snapshot when another process changed it in
 * between. So two processes never take one id, and the kind and first tick of
 * the grant are those of the row it replaced.
 *
 * Durability: a lease is only as safe as the server's persistence (see
 * redis-segment-store.ts): a Redis that loses its last second of writes can
 * forget a grant, and a second holder could then take the same id while the
 * first still issues. Run it with `appendfsync always` when leases matter.
 */
import { InvalidArgumentError } from '../../core/errors.js';
import type { LeaseHolding, LeaseLedgerEntry, LeaseEventKind } from '../../ports/lease-ledger.js';
import type { AcquireRequest, HeldLease, LeaseRecord, LeaseRow, NodeClaim, WorkerLeaseStore } from '../../ports/worker-lease-store.js';
import { CLAIMED_FOR_GOOD_MS, chooseWorker, nodeOwner } from '../kit/lease/choose-worker.js';
import * as ledger from '../kit/lease/lease-ledger-rules.js';
import { RedisClient, type RedisClientOptions, globEscape } from './redis-client.js';

export interface RedisWorkerLeaseStoreOptions extends RedisClientOptions {
  /** Prefix of every lease key. Default `sequoia:lease:`. */
  readonly leasePrefix?: string;
}

/** Milliseconds of Redis's clock. Every script starts with it. */
const PRELUDE = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function int(n) return string.format('%d', n) end
local function parse(v)
  local g, e, lt, o = string.match(v, '^(%d+)|(%d+)|(-?%d+)|(.*)$')
  return tonumber(g), e, lt, o
end
`;

/** The space's rows and Redis's clock. */
const SNAPSHOT = `${PRELUDE}
return {int(now), redis.call('HGETALL', KEYS[1])}
`;

/**
 * Takes worker id ARGV[1] if its row is still ARGV[2] ('' = none): a new
 * generation ARGV[3] for owner ARGV[4], expiring ARGV[5] ms from now or at
 * ARGV[6] (a worker-node claim), keeping the last tick; the ledger row is
 * ARGV[7..13]. Answers the expiry, or false when the row changed.
 */
const TAKE = `${PRELUDE}
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return false end
local last = '-1'
if cur then local _g, _e, lt = parse(cur); last = lt end
local expires = ARGV[6]
if expires == '' then expires = int(now + tonumber(ARGV[5])) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. '|' .. expires .. '|' .. last .. '|' .. ARGV[4])
redis.call('XADD', KEYS[2], '*', 'g', ARGV[3], 'k', ARGV[7], 'o', ARGV[4], 'h', ARGV[8], 'p', ARGV[9], 'i', ARGV[10], 'v', ARGV[11],
  'f', ARGV[12], 'u', ARGV[13])
return expires
`;

/**
 * Renews (ARGV[5] = 'renew': ttl ARGV[6], the highest tick kept) or releases
 * (expires now, last tick ARGV[7]) worker id ARGV[1] while owner ARGV[2] and
 * generation ARGV[3] hold it, with its ledger row (holder ARGV[8..11], first
 * tick ARGV[12], '' = the new last tick). Answers {last tick, expiry}, or
 * false when the id changed hands.
 */
const RENEW_OR_RELEASE = `${PRELUDE}
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return false end
local g, _e, lt, o = parse(cur)
if o ~= ARGV[2] or g ~= tonumber(ARGV[3]) then return false end
local last, expires
if ARGV[5] == 'renew' then
  last = int(math.max(tonumber(lt), tonumber(ARGV[7])))
  expires = int(now + tonumber(ARGV[6]))
else
  last = ARGV[7]
  expires = '0'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. '|' .. expires .. '|' .. last .. '|' .. o)
local from = ARGV[12]
if from == '' then from = last end
redis.call('XADD', KEYS[2], '*', 'g', ARGV[3], 'k', ARGV[5], 'o', o, 'h', ARGV[8], 'p', ARGV[9], 'i', ARGV[10], 'v', ARGV[11],
  'f', from, 'u', last)
return {last, expires}
`;

/** A new worker-node id, Redis's clock and that id's row in the space ('' = none). */
const NEXT_NODE = `${PRELUDE}
local id = redis.call('INCR', KEYS[1])
return {id, int(now), redis.call('HGET', KEYS[2], tostring(id)) or ''}
`;

/** Takes at most this many snapshots per acquire: each retry means another process took an id meanwhile. */
const MAX_ROUNDS = 50;

interface Row {
  readonly generation: number;
  readonly expiresAtMs: number;
  readonly lastTick: number;
  readonly owner: string;
  /** As stored: the compare-and-set compares it. */
  readonly raw: string;
}

function parseRow(raw: string): Row {
  const m = /^(\d+)\|(\d+)\|(-?\d+)\|(.*)$/s.exec(raw);
  if (!m) throw new Error(`malformed lease row ${JSON.stringify(raw)}`);
  return { generation: Number(m[1]), expiresAtMs: Number(m[2]), lastTick: Number(m[3]), owner: m[4] as string, raw };
}

export class RedisWorkerLeaseStore implements WorkerLeaseStore {
  readonly kind = 'redis';
  readonly leasePrefix: string;
  private readonly client: RedisClient;
  private initialised = false;

  constructor(options: RedisWorkerLeaseStoreOptions) {
    this.leasePrefix = options.leasePrefix ?? 'sequoia:lease:';
    if (this.leasePrefix === '') throw new InvalidArgumentError('store: the Redis leasePrefix must not be empty');
    this.client = new RedisClient({ clientName: 'sequoia-leases', ...options });
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.client.connect();
    this.initialised = true;
  }

  async acquire(req: AcquireRequest): Promise<LeaseRecord | { refused: string }> {
    for (let round = 0; ; round++) {
      const [now, flat] = (await this.client.script(SNAPSHOT, [this.rowsKey(req.space)], [])) as [string, string[]];
      const rows = new Map<number, Row>();
      for (let i = 0; i + 1 < flat.length; i += 2) rows.set(Number(flat[i]), parseRow(flat[i + 1] as string));
      const leaseRows = [...rows].map(([workerId, r]): LeaseRow => ({ workerId, owner: r.owner, expiresAtMs: r.expiresAtMs }));
      const choice = chooseWorker(leaseRows, Number(now), req);
      if ('refused' in choice) return choice;
      const prev = rows.get(choice.workerId);
      const taken: ledger.Taken = { generation: (prev?.generation ?? 0) + 1, lastTick: prev?.lastTick ?? -1 };
      const row = ledger.grantRow(req, choice.workerId, taken, leaseRows);
      const expires = await this.take(req.space, choice.workerId, prev, req.owner, taken, row, String(req.ttlMs), '');
      if (expires !== undefined) return ledger.granted(choice.workerId, taken, expires);
      if (round >= MAX_ROUNDS) return { refused: `worker id ${choice.workerId} kept changing hands while this process tried to take it` };
    }
  }

  async renew(lease: HeldLease, ttlMs: number, lastTick: number): Promise<LeaseRecord | undefined> {
    const r = await this.renewOrRelease(lease, 'renew', ttlMs, lastTick);
    return r && { workerId: lease.workerId, generation: lease.generation, lastTick: r.lastTick, expiresAtMs: r.expiresAtMs };
  }

  async release(lease: HeldLease, lastTick: number): Promise<void> {
    await this.renewOrRelease(lease, 'release', 0, lastTick);
  }

  async registerNode(space: string, host: string, workerCount: number): Promise<NodeClaim> {
    for (;;) {
      const [id, now, raw] = (await this.client.script(NEXT_NODE, [this.leasePrefix + 'nodes', this.rowsKey(space)], [])) as [
        number,
        string,
        string,
      ];
      if (id >= workerCount) return { workerId: id, lastTick: -1 };
      const prev = raw === '' ? undefined : parseRow(raw);
      if (prev && prev.expiresAtMs > Number(now)) continue;
      const owner = nodeOwner(host);
      const taken: ledger.Taken = { generation: (prev?.generation ?? 0) + 1, lastTick: prev?.lastTick ?? -1 };
      const row = ledger.claimRow(space, id, owner, taken, prev);
      // A row that changed since it was read: that id is someone's now, and node ids are never reused: the next one.
      if ((await this.take(space, id, prev, owner, taken, row, '', String(CLAIMED_FOR_GOOD_MS))) !== undefined) {
        return { workerId: id, lastTick: taken.lastTick };
      }
    }
  }

  async holdings(space: string, workerId?: number): Promise<readonly LeaseHolding[]> {
    const ids =
      workerId === undefined ? (await this.client.call(() => this.client.redis.hkeys(this.rowsKey(space)))).map(Number) : [workerId];
    const all: LeaseLedgerEntry[] = [];
    for (const id of ids) all.push(...(await this.entries(space, id)));
    return ledger.holdingsFromEntries(all);
  }

  async entries(space: string, workerId: number): Promise<readonly LeaseLedgerEntry[]> {
    const items = await this.client.call(() => this.client.redis.xrange(this.ledgerKey(space, workerId), '-', '+'));
    return items.map((item) => toEntry(space, workerId, item));
  }

  /** Stream by stream, entries older than the retention in Redis's clock (a stream entry's id starts with it). */
  async pruneLedger(retentionMs: number, limit: number): Promise<number> {
    const [sec, usec] = await this.client.call(() => this.client.redis.time());
    const before = Number(sec) * 1000 + Math.floor(Number(usec) / 1000) - retentionMs;
    if (before <= 0) return 0;
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.client.call(() =>
        this.client.redis.scan(cursor, 'MATCH', `${globEscape(this.leasePrefix)}ledger:*`, 'COUNT', 100),
      );
      cursor = next;
      for (const key of keys) {
        if (deleted >= limit) return deleted;
        // One more than the room left: a worker-node claim among them is kept.
        const old = await this.client.call(() => this.client.redis.xrange(key, '-', String(before - 1), 'COUNT', limit - deleted + 1));
        const drop = old.filter(([, f]) => Number(field(f, 'u')) < ledger.HELD_FOR_GOOD_TICK).slice(0, limit - deleted);
        if (drop.length > 0) deleted += await this.client.call(() => this.client.redis.xdel(key, ...drop.map(([id]) => id)));
      }
    } while (cursor !== '0' && deleted < limit);
    return deleted;
  }

  async close(): Promise<void> {
    this.initialised = false;
    await this.client.close();
  }

  /** The hash of a space's lease rows (exported for tests). */
  rowsKey(space: string): string {
    return `${this.leasePrefix}rows:${space}`;
  }

  /** The ledger stream of one worker id (exported for tests). */
  ledgerKey(space: string, workerId: number): string {
    return `${this.leasePrefix}ledger:${space}:${workerId}`;
  }

  /** The compare-and-set take (TAKE); the expiry, or undefined when the row is no longer `prev`. */
  private async take(
    space: string,
    workerId: number,
    prev: Row | undefined,
    owner: string,
    taken: ledger.Taken,
    row: ledger.LedgerRow,
    ttlMs: string,
    fixedExpiry: string,
  ): Promise<number | undefined> {
    const r = await this.client.script(
      TAKE,
      [this.rowsKey(space), this.ledgerKey(space, workerId)],
      [
        String(workerId),
        prev?.raw ?? '',
        String(taken.generation),
        owner,
        ttlMs,
        fixedExpiry,
        row.kind,
        ...holderArgs(row),
        String(row.fromTick),
        String(row.untilTick),
      ],
    );
    return r === null ? undefined : Number(r);
  }

  /** The ledger row's holder and first tick come from the holding's latest row (followingRow); the script checks the lease is still held. */
  private async renewOrRelease(
    lease: HeldLease,
    kind: 'renew' | 'release',
    ttlMs: number,
    lastTick: number,
  ): Promise<{ lastTick: number; expiresAtMs: number } | undefined> {
    const key = this.ledgerKey(lease.space, lease.workerId);
    const latestItem = (await this.client.call(() => this.client.redis.xrevrange(key, '+', '-', 'COUNT', 1)))[0];
    const latest = latestItem && toEntry(lease.space, lease.workerId, latestItem);
    // The untilTick placeholder: the script sets the real one (the highest tick kept).
    const row = ledger.followingRow(lease, kind, lastTick, latest?.generation === lease.generation ? latest : undefined);
    const from = latest?.generation === lease.generation ? String(row.fromTick) : '';
    const r = (await this.client.script(
      RENEW_OR_RELEASE,
      [this.rowsKey(lease.space), key],
      [String(lease.workerId), lease.owner, String(lease.generation), '', kind, String(ttlMs), String(lastTick), ...holderArgs(row), from],
    )) as [string, string] | null;
    return r === null ? undefined : { lastTick: Number(r[0]), expiresAtMs: Number(r[1]) };
  }
}

const holderArgs = (row: ledger.LedgerRow): string[] => [row.holder.host, String(row.holder.pid), row.holder.instance, row.holder.version];

function field(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

function toEntry(space: string, workerId: number, [id, f]: [string, string[]]): LeaseLedgerEntry {
  return {
    space,
    workerId,
    generation: Number(field(f, 'g')),
    kind: field(f, 'k') as LeaseEventKind,
    owner: field(f, 'o') ?? '',
    holder: { host: field(f, 'h') ?? '', pid: Number(field(f, 'p') ?? 0), instance: field(f, 'i') ?? '', version: field(f, 'v') ?? '' },
    fromTick: Number(field(f, 'f')),
    untilTick: Number(field(f, 'u')),
    atMs: Number(id.split('-')[0]),
  };
}
