/**
 * SegmentStore on Redis (`ioredis`, a single primary; Redis Cluster is not
 * supported because the scripts touch a tag's hash and the tag set together).
 *
 * Layout: one hash per tag at `<keyPrefix><tag>` (default `sequoia:tag:`) with
 * the fields max_id, step, description, updated_at (ms), fence_epoch and
 * generation (absent on hashes written before generations: '0'), and
 * one set of tag names at `tagsKey` (default `sequoia:tags`) for listTags.
 * Every write is a Lua script, so it is atomic. Allocation checks that
 * max_id + step stays at or below 2^63-1 and then HINCRBYs max_id. Lua numbers
 * are doubles, exact only below 2^53, so the check splits the decimal max_id
 * into its last 9 digits and the rest (both exact in a double) and compares
 * against 9223372036|854775807; HINCRBY itself is exact 64-bit arithmetic, and
 * max_id travels back as a string (a Lua number would round it). `fence`
 * compares decimal strings by length, then lexicographically.
 *
 * PERSISTENCE: THE GUARANTEE IS ONLY AS GOOD AS THE SERVER'S DURABILITY.
 * - `appendonly yes` + `appendfsync always`: an allocation Redis answered is
 *   on disk first; a crash loses none, so no range is ever answered twice.
 * - `appendonly yes` + `appendfsync everysec` (the common default): a crash of
 *   the Redis host can lose up to about one second of HINCRBYs. After the
 *   restart max_id is lower than a range already handed out, and the store
 *   WILL ANSWER THAT RANGE AGAIN. Every Sequoia server that received one of
 *   the lost ranges holds it in its durable high-water mark and refuses the
 *   repeat with STORE_ROLLBACK_DETECTED; but a server that never saw those
 *   ranges (a new one, or one whose state directory was lost) cannot know. So
 *   after a Redis crash an operator must `sequoia fence TAG --to N` every tag
 *   with N above anything handed out (e.g. current max_id + the largest step
 *   × servers × a margin) before relying on it again.
 * - RDB snapshots only (or no persistence): minutes of allocations are lost on
 *   a crash; the same applies, with a much larger window. Not recommended.
 * - Replica promotion (Sentinel failover) loses whatever the replica had not
 *   received yet: treat it like a crash. `WAIT` is not used.
 *
 * Availability: the client never queues commands while disconnected
 * (enableOfflineQueue false) and retries a command at most once, so a down
 * Redis answers STORE_UNAVAILABLE within the connect/command timeouts instead
 * of hanging; it reconnects by itself in the background.
 */
import type { Redis } from 'ioredis';
import { InvalidArgumentError, TagExistsError, TagNotFoundError } from '../../core/errors.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import {
  assertGiveBack,
  assertStoredId,
  DEFAULT_START,
  DEFAULT_STEP,
  exhausted,
  LEGACY_GENERATION,
  newGeneration,
  readBack,
} from '../kit/segment/segment-rules.js';
import { byFirst } from '../../core/id.js';
import type { LedgerEntry, LedgerPage, LedgerTop, ServerIdentity } from '../../ports/range-ledger.js';
import { covers, higherTop, identityValues, ledgerTopOf, processIdentity, rangeLength } from '../kit/segment/range-ledger.js';
import { storedMaxId } from '../kit/connection/store-boundary.js';
import { RedisClient, type RedisClientOptions, globEscape, redisError } from './redis-client.js';

export interface RedisSegmentStoreOptions extends RedisClientOptions {
  /** Prefix of each tag's hash key. Default `sequoia:tag:`. */
  readonly keyPrefix?: string;
  /** Key of the set of tag names. Default `sequoia:tags`. Must not start with keyPrefix. */
  readonly tagsKey?: string;
  /** Prefix of each tag's range-ledger stream. Default `sequoia:ledger:`. Must not overlap keyPrefix or tagsKey. */
  readonly ledgerPrefix?: string;
  /** Who takes ranges, for the ledger. Default: this process. */
  readonly identity?: ServerIdentity;
}

const ALLOCATE = `
local h = redis.call('HMGET', KEYS[1], 'max_id', 'step', 'fence_epoch', 'generation')
if not h[1] then return {'NOT_FOUND'} end
local stored = h[2]
local step = ARGV[1]
if step == '' then step = stored end
local m = h[1]
local n = string.len(m)
local hi = 0
if n > 9 then hi = tonumber(string.sub(m, 1, n - 9)) end
local lo = tonumber(string.sub(m, -9)) + tonumber(step)
local carry = math.floor(lo / 1000000000)
lo = lo - carry * 1000000000
hi = hi + carry
if hi > 9223372036 or (hi == 9223372036 and lo > 854775807) then return {'EXHAUSTED'} end
if redis.replicate_commands then redis.replicate_commands() end
redis.call('HINCRBY', KEYS[1], 'max_id', step)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
local max = redis.call('HGET', KEYS[1], 'max_id')
redis.call('XADD', KEYS[2], '*', 'k', 'allocate', 'e', max, 'n', step, 'f', h[3] or '0', 'g', h[4] or '0', 'h', ARGV[3], 'p', ARGV[4], 'i', ARGV[5], 'v', ARGV[6])
return {'OK', max, step, stored, h[3] or '0', h[4] or '0'}
`;

const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'step', ARGV[3], 'description', ARGV[4], 'updated_at', ARGV[5], 'fence_epoch', '0', 'generation', ARGV[6])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`;

const UPDATE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'step', ARGV[1]) end
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'description', ARGV[3]) end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[4])
return 1
`;

const DELETE = `
local n = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return n
`;

const FENCE = `
local m = redis.call('HGET', KEYS[1], 'max_id')
if not m then return 0 end
local to = ARGV[1]
if redis.replicate_commands then redis.replicate_commands() end
local raised = string.len(to) > string.len(m) or (string.len(to) == string.len(m) and to > m)
if raised then
  redis.call('HSET', KEYS[1], 'max_id', to)
end
local fence_epoch = redis.call('HINCRBY', KEYS[1], 'fence_epoch', 1)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
if raised then
  redis.call('XADD', KEYS[2], '*', 'k', 'fence', 's', m, 'e', to, 'n', '0', 'f', tostring(fence_epoch), 'g', redis.call('HGET', KEYS[1], 'generation') or '0',
    'h', ARGV[3], 'p', ARGV[4], 'i', ARGV[5], 'v', ARGV[6])
end
return 1
`;

// Compare-and-set on the decimal string: max_id is always written by HINCRBY
// or HSET of a canonical decimal, so equal values are equal strings.
const GIVE_BACK = `
local m = redis.call('HGET', KEYS[1], 'max_id')
if not m or m ~= ARGV[1] then return 0 end
if (redis.call('HGET', KEYS[1], 'fence_epoch') or '0') ~= ARGV[4] then return 0 end
if (redis.call('HGET', KEYS[1], 'generation') or '0') ~= ARGV[5] then return 0 end
if redis.replicate_commands then redis.replicate_commands() end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'updated_at', ARGV[3])
if ARGV[6] ~= '0' then
  redis.call('XADD', KEYS[2], '*', 'k', 'give-back', 'e', ARGV[1], 'n', ARGV[6], 'f', redis.call('HGET', KEYS[1], 'fence_epoch') or '0',
    'g', redis.call('HGET', KEYS[1], 'generation') or '0', 'h', ARGV[7], 'p', ARGV[8], 'i', ARGV[9], 'v', ARGV[10])
end
return 1
`;

export class RedisSegmentStore implements SegmentStore {
  readonly kind = 'redis';
  readonly keyPrefix: string;
  readonly tagsKey: string;
  readonly ledgerPrefix: string;
  private readonly who: ServerIdentity;
  private readonly client: RedisClient;
  private initialised = false;

  constructor(options: RedisSegmentStoreOptions) {
    this.keyPrefix = options.keyPrefix ?? 'sequoia:tag:';
    this.tagsKey = options.tagsKey ?? 'sequoia:tags';
    if (this.keyPrefix === '' || this.tagsKey.startsWith(this.keyPrefix)) {
      throw new InvalidArgumentError('store: the Redis tagsKey must not start with keyPrefix (a tag could collide with it)');
    }
    this.ledgerPrefix = options.ledgerPrefix ?? 'sequoia:ledger:';
    const overlaps = (a: string, b: string) => a.startsWith(b) || b.startsWith(a);
    if (this.ledgerPrefix === '' || overlaps(this.ledgerPrefix, this.keyPrefix) || this.tagsKey.startsWith(this.ledgerPrefix)) {
      throw new InvalidArgumentError('store: the Redis ledgerPrefix must not overlap keyPrefix or tagsKey');
    }
    this.who = options.identity ?? processIdentity();
    this.client = new RedisClient(options);
  }

  async init(): Promise<void> {
    if (this.initialised) return;
    await this.client.connect();
    this.initialised = true;
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    if (step !== undefined && (!Number.isSafeInteger(step) || step < 1)) throw new InvalidArgumentError('step must be a positive integer');
    const r = (await this.script(
      ALLOCATE,
      [this.key(tag), this.ledgerKey(tag)],
      [step === undefined ? '' : String(step), String(Date.now()), ...this.identityArgs()],
    )) as string[];
    if (r[0] === 'NOT_FOUND') throw new TagNotFoundError(tag);
    if (r[0] === 'EXHAUSTED') throw exhausted(tag);
    const [, maxId, applied, stored, fenceEpoch, generation] = r;
    return {
      maxId: BigInt(maxId as string),
      step: Number(applied),
      storedStep: Number(stored),
      fenceEpoch: Number(fenceEpoch),
      generation: generation ?? LEGACY_GENERATION,
    };
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    const h = await this.call(() => this.redis.hgetall(this.key(tag)));
    return toInfo(tag, h);
  }

  async listTags(): Promise<TagInfo[]> {
    const tags = (await this.call(() => this.redis.smembers(this.tagsKey))).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (tags.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const t of tags) pipeline.hgetall(this.key(t));
    const results = await this.call(() => pipeline.exec());
    const out: TagInfo[] = [];
    tags.forEach((t, i) => {
      const [err, h] = results?.[i] ?? [new Error('no reply'), undefined];
      if (err) throw redisError(err);
      const info = toInfo(t, h as Record<string, string>);
      if (info) out.push(info);
    });
    return out;
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    const created = await this.script(
      CREATE,
      [this.key(t.tag), this.tagsKey],
      [t.tag, start.toString(), String(t.step ?? DEFAULT_STEP), t.description ?? '', String(Date.now()), newGeneration()],
    );
    if (Number(created) !== 1) throw new TagExistsError(t.tag);
    return readBack(this, t.tag);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    const ok = await this.script(
      UPDATE,
      [this.key(tag)],
      [
        update.step === undefined ? '' : String(update.step),
        update.description === undefined ? '0' : '1',
        update.description ?? '',
        String(Date.now()),
      ],
    );
    if (Number(ok) !== 1) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async deleteTag(tag: string): Promise<void> {
    const n = await this.script(DELETE, [this.key(tag), this.tagsKey], [tag]);
    if (Number(n) === 0) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    assertStoredId('to', to);
    const ok = await this.script(FENCE, [this.key(tag), this.ledgerKey(tag)], [to.toString(), String(Date.now()), ...this.identityArgs()]);
    if (Number(ok) !== 1) throw new TagNotFoundError(tag);
    return readBack(this, tag);
  }

  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    const ok = await this.script(
      GIVE_BACK,
      [this.key(tag), this.ledgerKey(tag)],
      [
        expect.maxId.toString(),
        from.toString(),
        String(Date.now()),
        String(expect.fenceEpoch),
        expect.generation,
        (expect.maxId - from).toString(),
        ...this.identityArgs(),
      ],
    );
    return Number(ok) === 1;
  }

  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    return (await this.readLedger(tag)).filter((e) => covers(e, id));
  }

  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    return (await this.readLedger(tag)).sort(byFirst);
  }

  /** In the stream's order (the order the ranges moved), `limit` entries a page; the cursor is the last stream id read. */
  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    const items = await this.call(() =>
      this.redis.xrange(this.ledgerKey(tag), cursor === undefined ? '-' : `(${cursor}`, '+', 'COUNT', limit),
    );
    const last = items[items.length - 1];
    return { entries: items.map((item) => this.ledgerEntry(tag, item)), next: items.length < limit || !last ? undefined : last[0] };
  }

  /** A page at a time: a busy tag's stream holds a row per range for the whole retention. */
  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    let top: LedgerTop | undefined;
    let cursor: string | undefined;
    do {
      const page = await this.ledgerPage(tag, cursor, 1000);
      top = higherTop(top, ledgerTopOf(page.entries));
      cursor = page.next;
    } while (cursor !== undefined);
    return top;
  }

  /** Deletes, stream by stream, entries older than `beforeMs` (a stream entry's id starts with Redis's own ms clock). */
  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.call(() => this.redis.scan(cursor, 'MATCH', `${globEscape(this.ledgerPrefix)}*`, 'COUNT', 100));
      cursor = next;
      for (const key of keys) {
        if (deleted >= limit) return deleted;
        const old = await this.call(() => this.redis.xrange(key, '-', String(Math.max(0, beforeMs - 1)), 'COUNT', limit - deleted));
        if (old.length > 0) deleted += await this.call(() => this.redis.xdel(key, ...old.map(([id]) => id)));
      }
    } while (cursor !== '0' && deleted < limit);
    return deleted;
  }

  async ping(): Promise<void> {
    await this.call(() => this.redis.ping());
  }

  /** The stream of a tag's ledger (exported for tests that look at it). */
  ledgerKey(tag: string): string {
    return this.ledgerPrefix + tag;
  }

  private identityArgs(): string[] {
    return identityValues(this.who).map(String);
  }

  private async readLedger(tag: string): Promise<LedgerEntry[]> {
    const items = await this.call(() => this.redis.xrange(this.ledgerKey(tag), '-', '+'));
    return items.map((item) => this.ledgerEntry(tag, item));
  }

  private ledgerEntry(tag: string, [id, fields]: [string, string[]]): LedgerEntry {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
    // A range is written as its end (exclusive) and length, or (a fence, whose length Lua cannot subtract exactly) its start.
    const end = BigInt(f.e ?? '0');
    const range = f.s !== undefined ? { first: BigInt(f.s), last: end - 1n } : { first: end - BigInt(f.n ?? '0'), last: end - 1n };
    return {
      tag,
      kind: f.k === 'give-back' || f.k === 'fence' ? f.k : 'allocate',
      ...range,
      stride: 1,
      step: rangeLength(range),
      host: f.h ?? '',
      pid: Number(f.p ?? 0),
      instance: f.i ?? '',
      version: f.v ?? '',
      atMs: Number(id.split('-')[0]),
      fenceEpoch: Number(f.f ?? 0),
      generation: f.g ?? LEGACY_GENERATION,
    };
  }

  async close(): Promise<void> {
    this.initialised = false;
    await this.client.close();
  }

  /** The hash key of a tag (exported for tests that write the store directly). */
  key(tag: string): string {
    return this.keyPrefix + tag;
  }

  private get redis(): Redis {
    return this.client.redis;
  }

  private script(body: string, keys: string[], args: string[]): Promise<unknown> {
    return this.client.script(body, keys, args);
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return this.client.call(fn);
  }
}

function toInfo(tag: string, h: Record<string, string> | undefined): TagInfo | undefined {
  if (!h || h.max_id === undefined) return undefined;
  return {
    tag,
    maxId: storedMaxId('Redis store', tag, h.max_id),
    step: Number(h.step),
    description: h.description ?? '',
    updatedAt: new Date(Number(h.updated_at ?? 0)),
    fenceEpoch: Number(h.fence_epoch ?? 0),
    generation: h.generation ?? LEGACY_GENERATION,
  };
}
