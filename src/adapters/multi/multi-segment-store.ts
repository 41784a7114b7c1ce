/**
 * Multi-store HA, as Didi's Tinyid: N independent stores, any of which may be
 * down while the others serve. Store i (0-based, its position in the URL list)
 * hands out only IDs ≡ i (mod N), so the stores never need to talk to each
 * other and can never answer the same ID.
 *
 * UNITS. Each underlying store keeps its ordinary row per tag; its max_id is a
 * counter c of "units". Allocating step s on store i moves c to c' = c + s and
 * yields the units [c, c'), which are the IDs u*N + i. The answer is presented
 * as an Allocation with stride N and offset i: maxId = c'*N + i, step = s, so
 * the segment is [maxId - s*N, maxId) stepping by N (s IDs). A segment whose
 * last ID would pass 2^63-1 is refused with ID_SPACE_EXHAUSTED (its units stay
 * burned: a gap, never a repeat).
 *
 * ROTATION AND FAILOVER. allocate() starts at a rotating index and fails over
 * to the next store on STORE_UNAVAILABLE (or ID_SPACE_EXHAUSTED on that one
 * store); a store that just failed is tried last for `downCooldownMs`. Only
 * when every store fails does it throw STORE_UNAVAILABLE.
 *
 * A STORE BEHIND. Counters drift apart (stores are used unevenly, one was
 * down). That is fine for uniqueness, since residue classes are disjoint, but
 * a store's answers are only monotonic within its own class: the rollback
 * guard must keep one high-water mark per (tag, stride, offset), not per tag.
 *
 * CREATING A TAG. createTag creates the tag on every reachable store, store i
 * at counter ceil((start - i) / N) (so the first ID of every class is >= start),
 * and succeeds when at least one store created it. A store that was down gets
 * the tag lazily, on its first allocation (or fence) that finds it missing:
 * it is created there at counter (highest counter of the tag on the other
 * reachable stores) + 1, which is at or above both its initial counter and any
 * fence applied meanwhile. If the tag exists on none of the reachable stores
 * and some are unreachable, the answer is STORE_UNAVAILABLE (not TAG_NOT_FOUND:
 * we cannot know). updateTag updates the reachable stores (the step is only a
 * minimum, so a stale step elsewhere is harmless). deleteTag and fence need
 * every store: they apply to the reachable ones and then throw
 * STORE_UNAVAILABLE naming the unreachable ones, to be run again. A partly
 * deleted tag may be recreated lazily from a surviving copy: never a repeat,
 * at worst a resurrection; re-run the delete.
 *
 * N AND ORDER ARE RECORDED. Each store holds a meta row, the reserved tag
 * `sequoia:multi` (':' is not legal in a user tag) whose description is
 * {"n":N,"index":i}. A store configured with another N or position refuses
 * with INVALID_ARGUMENT (field `store`) before it hands out anything: a wrong
 * N or a swapped URL order would map two stores onto one residue class.
 * A single store (no multi) that finds the meta row must refuse too: its
 * counters are units, not IDs.
 *
 * GROWING N (N -> N'), the safe rule:
 *  1. stop every server of the set;
 *  2. for each tag, H = getTag(tag).maxId on the old set (max over stores of
 *     c_i*N + i): an exclusive bound above every ID the old set handed out;
 *  3. on every store of the new set (new or reused), rewrite the meta row to
 *     {"n":N',"index":i'} and raise the tag's counter to at least
 *     ceil((H - i') / N') (that is what fence(tag, H) does on the new set);
 *  4. start the servers with the new URL list.
 * Every new ID u*N' + i' is then >= H. Until step 3 is done, the meta check
 * refuses the new configuration, so skipping the procedure fails loudly.
 */
import { InvalidArgumentError, SequoiaError, TagExistsError, TagNotFoundError, UnavailableError } from '../../core/errors.js';
import { type Clock, monotonicMs, systemClock } from '../../core/clock.js';
import { byFirst, MAX_ID } from '../../core/id.js';
import { MULTI_META_TAG } from '../../core/segment/multi-meta-tag.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../ports/segment-store.js';
import { assertGiveBack, assertStoredId, DEFAULT_START, exhausted } from '../kit/segment/segment-rules.js';
import type { LedgerEntry, LedgerPage, LedgerTop } from '../../ports/range-ledger.js';
import { higherTop } from '../kit/segment/range-ledger.js';

export interface MultiSegmentStoreOptions {
  /** A store that failed is tried last for this long, ms. Default 5000. */
  readonly downCooldownMs?: number;
  /** Milliseconds clock for the cooldown. Default the clock's monotonic reading (a stepped wall clock must not stretch it). */
  readonly now?: () => number;
  /** Default systemClock; `now` above takes precedence over it. */
  readonly clock?: Clock;
}

interface Member {
  readonly store: SegmentStore;
  readonly index: number;
  ready: Promise<void> | undefined;
  downUntil: number;
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: SequoiaError };

export class MultiSegmentStore implements SegmentStore {
  readonly kind: string;
  readonly n: number;
  readonly stride: number;
  private readonly members: Member[];
  private readonly bigN: bigint;
  private readonly cooldown: number;
  private readonly now: () => number;
  private rotation = 0;

  constructor(stores: readonly SegmentStore[], options: MultiSegmentStoreOptions = {}) {
    if (stores.length < 1) throw new InvalidArgumentError('store: a multi-store set needs at least one store');
    this.n = stores.length;
    this.stride = stores.length;
    this.bigN = BigInt(stores.length);
    this.members = stores.map((store, index) => ({ store, index, ready: undefined, downUntil: 0 }));
    this.kind = `multi(${stores.map((s) => s.kind).join(',')})`;
    this.cooldown = options.downCooldownMs ?? 5000;
    const clock = options.clock ?? systemClock;
    this.now = options.now ?? (() => monotonicMs(clock));
  }

  /** The underlying stores, in order (store i hands out IDs ≡ i mod N). */
  get stores(): readonly SegmentStore[] {
    return this.members.map((m) => m.store);
  }

  async init(): Promise<void> {
    const results = await this.onAll((m) => this.ready(m));
    const fatal = results.find((r) => !r.ok && r.error.code !== 'STORE_UNAVAILABLE');
    if (fatal && !fatal.ok) throw fatal.error;
    if (!results.some((r) => r.ok)) {
      // At start, say where each store failed (host and port in the members' own messages).
      const failed = results.flatMap((r, i) => (r.ok ? [] : [{ i, error: r.error }]));
      const why = failed.map((f) => `#${f.i + 1}: ${f.error.message}`).join('; ');
      throw new UnavailableError('STORE_UNAVAILABLE', `no store of the multi-store set could be initialised (${why})`, {
        cause: failed[0]?.error,
        retryAfterMs: 1000,
      });
    }
  }

  async allocate(tag: string, step?: number): Promise<Allocation> {
    if (tag === MULTI_META_TAG) throw new TagNotFoundError(tag);
    const first = this.rotation;
    this.rotation = (this.rotation + 1) % this.n;
    const now = this.now();
    const order: Member[] = [];
    for (let k = 0; k < this.n; k++) order.push(this.members[(first + k) % this.n] as Member);
    // Stores that failed recently go last: still tried, but not first.
    order.sort((a, b) => Number(a.downUntil > now) - Number(b.downUntil > now));
    const errors: SequoiaError[] = [];
    for (const m of order) {
      try {
        const a = await this.allocateOn(m, tag, step);
        m.downUntil = 0;
        return a;
      } catch (e) {
        const err = asSequoia(e);
        if (err.code === 'STORE_UNAVAILABLE') m.downUntil = this.now() + this.cooldown;
        else if (err.code !== 'ID_SPACE_EXHAUSTED') throw err;
        errors.push(err);
      }
    }
    if (errors.every((e) => e.code === 'ID_SPACE_EXHAUSTED')) throw exhausted(tag);
    throw new UnavailableError('STORE_UNAVAILABLE', `no store of the multi-store set could allocate for tag ${JSON.stringify(tag)}`, {
      cause: errors.find((e) => e.code === 'STORE_UNAVAILABLE'),
      retryAfterMs: 1000,
    });
  }

  async getTag(tag: string): Promise<TagInfo | undefined> {
    if (tag === MULTI_META_TAG) return undefined;
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      return m.store.getTag(tag);
    });
    throwFatal(results);
    const found = this.found(results);
    if (found.length > 0) return this.merge(tag, found);
    if (results.some((r) => !r.ok)) throw unavailable(`tag ${JSON.stringify(tag)} is on no reachable store`, results);
    return undefined;
  }

  async listTags(): Promise<TagInfo[]> {
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      return m.store.listTags();
    });
    throwFatal(results);
    if (!results.some((r) => r.ok)) throw unavailable('no store of the multi-store set answered', results);
    const byTag = new Map<string, [number, TagInfo][]>();
    results.forEach((r, i) => {
      if (!r.ok) return;
      for (const info of r.value) {
        if (info.tag === MULTI_META_TAG) continue;
        let list = byTag.get(info.tag);
        if (!list) byTag.set(info.tag, (list = []));
        list.push([i, info]);
      }
    });
    return [...byTag.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([t, list]) => this.merge(t, list));
  }

  async createTag(t: NewTag): Promise<TagInfo> {
    if (t.tag === MULTI_META_TAG) throw new InvalidArgumentError(`tag ${JSON.stringify(MULTI_META_TAG)} is reserved`);
    const start = t.start ?? DEFAULT_START;
    assertStoredId('start', start);
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      return m.store.createTag({ ...t, start: this.unitsAtOrAbove(start, m.index) });
    });
    if (results.some((r) => !r.ok && r.error.code === 'TAG_EXISTS')) throw new TagExistsError(t.tag);
    throwFatal(results);
    const created = this.found(results);
    if (created.length === 0) throw unavailable(`could not create tag ${JSON.stringify(t.tag)} on any store`, results);
    return this.merge(t.tag, created);
  }

  async updateTag(tag: string, update: TagUpdate): Promise<TagInfo> {
    if (tag === MULTI_META_TAG) throw new TagNotFoundError(tag);
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      return m.store.updateTag(tag, update);
    });
    throwFatal(results, ['TAG_NOT_FOUND']);
    const found = this.found(results);
    if (found.length > 0) return this.merge(tag, found);
    if (results.some((r) => !r.ok && r.error.code !== 'TAG_NOT_FOUND')) {
      throw unavailable(`tag ${JSON.stringify(tag)} is on no reachable store`, results);
    }
    throw new TagNotFoundError(tag);
  }

  async deleteTag(tag: string): Promise<void> {
    if (tag === MULTI_META_TAG) throw new TagNotFoundError(tag);
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      await m.store.deleteTag(tag);
      return true;
    });
    throwFatal(results, ['TAG_NOT_FOUND']);
    if (results.some((r) => !r.ok && r.error.code !== 'TAG_NOT_FOUND')) {
      throw unavailable(`tag ${JSON.stringify(tag)} was deleted only on the reachable stores; delete it again when all are up`, results);
    }
    if (!results.some((r) => r.ok)) throw new TagNotFoundError(tag);
  }

  async fence(tag: string, to: bigint): Promise<TagInfo> {
    if (tag === MULTI_META_TAG) throw new TagNotFoundError(tag);
    assertStoredId('to', to);
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      const units = this.unitsAtOrAbove(to, m.index);
      try {
        return await m.store.fence(tag, units);
      } catch (e) {
        if (asSequoia(e).code !== 'TAG_NOT_FOUND') throw e;
        await this.lazyCreate(m, tag);
        return m.store.fence(tag, units);
      }
    });
    throwFatal(results, ['TAG_NOT_FOUND']);
    const fenced = this.found(results);
    if (results.some((r) => !r.ok && r.error.code !== 'TAG_NOT_FOUND')) {
      throw unavailable(`tag ${JSON.stringify(tag)} was fenced only on the reachable stores; fence again when all are up`, results);
    }
    if (fenced.length === 0) throw new TagNotFoundError(tag);
    return this.merge(tag, fenced);
  }

  /**
   * Per member: an Allocation's maxId c'*N + i names store i and its counter
   * c', so the compare-and-set goes to store i alone, in units. `newMaxId`
   * must be in the same residue class (an ID of that store); otherwise false.
   * (The allocator does not give back on a multi-store set: its high-water
   * marks are per residue class; this is here for completeness and tools.)
   */
  async giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    assertGiveBack(from, expect);
    if (tag === MULTI_META_TAG) return false;
    const i = expect.maxId % this.bigN;
    if (from % this.bigN !== i) return false;
    const m = this.members[Number(i)] as Member;
    await this.ready(m);
    // An Allocation's generation names its member and that member's own (each member's row is created, and re-created, on its own).
    const prefix = `${i}:`;
    const own = expect.generation.startsWith(prefix) ? expect.generation.slice(prefix.length) : expect.generation;
    return m.store.giveBack(tag, (from - i) / this.bigN, {
      maxId: (expect.maxId - i) / this.bigN,
      fenceEpoch: expect.fenceEpoch,
      generation: own,
    });
  }

  /**
   * Each member records its own ranges in its own units; the entries are
   * turned back into IDs here (unit u of store i is the ID u*N + i). Only the
   * member of the ID's residue class can have issued it.
   */
  async rangesContaining(tag: string, id: bigint): Promise<LedgerEntry[]> {
    if (id < 0n) return [];
    const i = id % this.bigN;
    const m = this.members[Number(i)] as Member;
    if (!m.store.rangesContaining) return [];
    await this.ready(m);
    return (await m.store.rangesContaining(tag, (id - i) / this.bigN)).map((e) => this.toIds(e, m.index));
  }

  /** Every member's entries, in IDs; a member that cannot be read fails the whole answer (an audit must not call its IDs foreign). */
  async ledgerEntries(tag: string): Promise<LedgerEntry[]> {
    const results = await this.onAll(async (m) => {
      if (!m.store.ledgerEntries) return [];
      await this.ready(m);
      return (await m.store.ledgerEntries(tag)).map((e) => this.toIds(e, m.index));
    });
    const failed = results.find((r) => !r.ok);
    if (failed && !failed.ok) throw failed.error;
    return results.flatMap((r) => (r.ok ? r.value : [])).sort(byFirst);
  }

  /**
   * Member after member (the cursor: the member's index and its own cursor).
   * A member that cannot be read fails the page, as in ledgerEntries.
   */
  async ledgerPage(tag: string, cursor: string | undefined, limit: number): Promise<LedgerPage> {
    const sep = cursor?.indexOf(':') ?? -1;
    const index = cursor === undefined ? 0 : Number(cursor.slice(0, sep));
    const m = this.members[index];
    if (!m) return { entries: [] };
    const following = index + 1 < this.members.length ? `${index + 1}:` : undefined;
    if (!m.store.ledgerPage) return { entries: [], next: following };
    await this.ready(m);
    const own = cursor === undefined || sep === cursor.length - 1 ? undefined : cursor.slice(sep + 1);
    const page = await m.store.ledgerPage(tag, own, limit);
    return {
      entries: page.entries.map((e) => this.toIds(e, m.index)),
      next: page.next === undefined ? following : `${index}:${page.next}`,
    };
  }

  /**
   * Every member's top, in IDs (unit u of store i is the ID u*N + i). A
   * member that cannot be read fails the answer: a top without it could be
   * below IDs that member handed out. A member without a ledger adds nothing.
   */
  async ledgerTop(tag: string): Promise<LedgerTop | undefined> {
    const results = await this.onAll(async (m) => {
      if (!m.store.ledgerTop) return undefined;
      await this.ready(m);
      const top = await m.store.ledgerTop(tag);
      return top && { ...top, last: top.last === undefined ? undefined : top.last * this.bigN + BigInt(m.index) };
    });
    const failed = results.find((r) => !r.ok);
    if (failed && !failed.ok) throw failed.error;
    return results.reduce<LedgerTop | undefined>((acc, r) => higherTop(acc, r.ok ? r.value : undefined), undefined);
  }

  /** On every reachable member, up to `limit` each (pruning is best effort: the next round takes the rest). */
  async pruneLedger(beforeMs: number, limit: number): Promise<number> {
    const results = await this.onAll(async (m) => {
      if (!m.store.pruneLedger) return 0;
      await this.ready(m);
      return m.store.pruneLedger(beforeMs, limit);
    });
    return results.reduce((n, r) => n + (r.ok ? r.value : 0), 0);
  }

  private toIds(e: LedgerEntry, index: number): LedgerEntry {
    const i = BigInt(index);
    return { ...e, first: e.first * this.bigN + i, last: e.last * this.bigN + i, stride: this.n, generation: `${index}:${e.generation}` };
  }

  /** Resolves when at least one store answers (the set can serve). */
  async ping(): Promise<void> {
    const results = await this.onAll(async (m) => {
      await this.ready(m);
      await m.store.ping();
      return true;
    });
    throwFatal(results);
    if (!results.some((r) => r.ok)) throw unavailable('no store of the multi-store set answered', results);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.members.map((m) => m.store.close()));
  }

  /** The first counter of store `index` whose IDs are all >= `id`. */
  private unitsAtOrAbove(id: bigint, index: number): bigint {
    const d = id - BigInt(index);
    return d <= 0n ? 0n : (d + this.bigN - 1n) / this.bigN;
  }

  private async allocateOn(m: Member, tag: string, step: number | undefined): Promise<Allocation> {
    await this.ready(m);
    let a: Allocation;
    try {
      a = await m.store.allocate(tag, step);
    } catch (e) {
      if (asSequoia(e).code !== 'TAG_NOT_FOUND') throw e;
      await this.lazyCreate(m, tag);
      a = await m.store.allocate(tag, step);
    }
    const i = BigInt(m.index);
    const lastId = (a.maxId - 1n) * this.bigN + i;
    if (lastId > MAX_ID) throw exhausted(tag);
    return {
      maxId: a.maxId * this.bigN + i,
      step: a.step,
      storedStep: a.storedStep,
      fenceEpoch: a.fenceEpoch,
      generation: `${m.index}:${a.generation}`,
      stride: this.n,
      offset: m.index,
    };
  }

  /**
   * The tag is missing on `m`: create it there above every counter the other
   * stores hold, or prove it exists nowhere (TAG_NOT_FOUND).
   */
  private async lazyCreate(m: Member, tag: string): Promise<void> {
    const others = this.members.filter((o) => o !== m);
    const results = await Promise.all(
      others.map((o) =>
        settle(async () => {
          await this.ready(o);
          return o.store.getTag(tag);
        }),
      ),
    );
    throwFatal(results);
    const found = results.flatMap((r) => (r.ok && r.value ? [r.value] : []));
    if (found.length === 0) {
      if (results.some((r) => !r.ok)) {
        throw unavailable(`tag ${JSON.stringify(tag)} is missing on store #${m.index + 1} and the others cannot tell`, results);
      }
      throw new TagNotFoundError(tag);
    }
    let top = 0n;
    for (const f of found) if (f.maxId > top) top = f.maxId;
    const first = found[0] as TagInfo;
    try {
      await m.store.createTag({ tag, step: first.step, description: first.description, start: top < MAX_ID ? top + 1n : MAX_ID });
    } catch (e) {
      if (asSequoia(e).code !== 'TAG_EXISTS') throw e;
    }
  }

  /** init + the meta-row check, once per member (again after a failure). */
  private ready(m: Member): Promise<void> {
    if (!m.ready) {
      const p = this.prepare(m);
      m.ready = p;
      p.catch(() => {
        if (m.ready === p) m.ready = undefined;
      });
    }
    return m.ready;
  }

  private async prepare(m: Member): Promise<void> {
    await m.store.init();
    const want = { n: this.n, index: m.index };
    let meta = await m.store.getTag(MULTI_META_TAG);
    if (!meta) {
      try {
        meta = await m.store.createTag({ tag: MULTI_META_TAG, step: 1, start: 0n, description: JSON.stringify(want) });
      } catch (e) {
        if (asSequoia(e).code !== 'TAG_EXISTS') throw e;
        meta = await m.store.getTag(MULTI_META_TAG);
      }
    }
    let got: { n?: unknown; index?: unknown } = {};
    try {
      got = JSON.parse(meta?.description ?? '{}') as typeof got;
    } catch {
      // unreadable: reported below
    }
    if (got.n !== want.n || got.index !== want.index) {
      throw new InvalidArgumentError(
        `store: store #${m.index + 1} (${m.store.kind}) records its place in a multi-store set as ` +
          `${JSON.stringify(meta?.description ?? '')} (index counts from 0), but the --store list puts it at index ${m.index} of ${this.n}; ` +
          'keep the list identical on every server, in the same order; to change the number or order of stores, follow ' +
          '"Growing the set" in docs/operations.md (stop every server, fence above every ID handed out, record the new places)',
      );
    }
  }

  private onAll<T>(fn: (m: Member) => Promise<T>): Promise<Settled<T>[]> {
    return Promise.all(this.members.map((m) => settle(() => fn(m))));
  }

  private found(results: Settled<TagInfo | undefined>[]): [number, TagInfo][] {
    const out: [number, TagInfo][] = [];
    results.forEach((r, i) => {
      if (r.ok && r.value) out.push([i, r.value]);
    });
    return out;
  }

  /** One view of a tag across stores: maxId is the highest end over all classes. */
  private merge(tag: string, list: [number, TagInfo][]): TagInfo {
    const [, first] = list[0] as [number, TagInfo];
    let maxId = 0n;
    let updatedAt = first.updatedAt;
    let fenceEpoch = 0;
    for (const [i, info] of list) {
      const end = info.maxId * this.bigN + BigInt(i);
      if (end > maxId) maxId = end;
      if (info.updatedAt > updatedAt) updatedAt = info.updatedAt;
      if (info.fenceEpoch > fenceEpoch) fenceEpoch = info.fenceEpoch;
    }
    // One token for the set: each member's generation, in store order (a member created lazily changes it);
    // with one store, the same token its allocations carry.
    const generation = list.map(([i, info]) => `${i}:${info.generation}`).join(',');
    return { tag, maxId, step: first.step, description: first.description, updatedAt, fenceEpoch, generation };
  }
}

async function settle<T>(fn: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    return { ok: false, error: asSequoia(e) };
  }
}

function asSequoia(e: unknown): SequoiaError {
  return e instanceof SequoiaError ? e : new UnavailableError('STORE_UNAVAILABLE', 'store error', { cause: e, retryAfterMs: 1000 });
}

/** Rethrows the first error that is not about reachability (a misconfiguration, a bug). */
function throwFatal(results: Settled<unknown>[], allowed: readonly string[] = []): void {
  for (const r of results) {
    if (!r.ok && r.error.code !== 'STORE_UNAVAILABLE' && !allowed.includes(r.error.code)) throw r.error;
  }
}

function unavailable(message: string, results: Settled<unknown>[]): UnavailableError {
  const down = results.flatMap((r, i) => (!r.ok && r.error.code === 'STORE_UNAVAILABLE' ? [`#${i + 1}`] : []));
  const cause = results.find((r) => !r.ok);
  return new UnavailableError('STORE_UNAVAILABLE', `${message}${down.length ? ` (unreachable: ${down.join(', ')})` : ''}`, {
    cause: cause && !cause.ok ? cause.error : undefined,
    retryAfterMs: 1000,
  });
}
