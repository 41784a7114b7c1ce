import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createStore } from '../../src/app/stores.js';
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import { MultiSegmentStore } from '../../src/adapters/multi/multi-segment-store.js';
import { MULTI_META_TAG } from '../../src/core/segment/multi-meta-tag.js';
import { type SequoiaError, UnavailableError } from '../../src/core/errors.js';
import type { Allocation, GiveBackExpectation, NewTag, SegmentStore, TagInfo, TagUpdate } from '../../src/ports/segment-store.js';
import { describeWithService } from '../helpers/services.js';
import {
  memoryHarness,
  mysqlHarness,
  postgresHarness,
  probeMysql,
  probePostgres,
  probeRedis,
  redisHarness,
  sqliteHarness,
} from './backends.js';
import { type ContractHarness, idsOf, runSegmentStoreContract } from './segment-store-contract.js';

function multiHarness(parts: ContractHarness[]): ContractHarness {
  const store = new MultiSegmentStore(parts.map((p) => p.store));
  const urls = parts.map((p) => p.url);
  return {
    store,
    stride: parts.length,
    url: urls.every((u) => u !== undefined) ? urls.join(',') : undefined,
    snapshot: (tag) => Promise.all(parts.map((p) => p.snapshot(tag))),
    restore: async (tag, snap) => {
      await Promise.all(parts.map((p, i) => p.restore(tag, (snap as unknown[])[i])));
    },
    reopen: parts.every((p) => p.reopen)
      ? async () => new MultiSegmentStore(await Promise.all(parts.map((p) => (p.reopen as () => Promise<SegmentStore>)())))
      : undefined,
    cleanup: async () => {
      await store.close();
      await Promise.all(parts.map((p) => p.cleanup()));
    },
  };
}

runSegmentStoreContract('multi (2 × memory)', async () => multiHarness([memoryHarness(), memoryHarness()]), { inProcessOnly: true });

runSegmentStoreContract('multi (3 × sqlite files)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-contract-multi-'));
  const h = multiHarness(['a', 'b', 'c'].map((n) => sqliteHarness(dir, n)));
  return {
    ...h,
    cleanup: async () => {
      await h.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

const describeAll = await describeWithService('PostgreSQL, MariaDB and Redis', () =>
  Promise.all([probePostgres(), probeMysql(), probeRedis()]),
);
describeAll('multi over real servers', () =>
  runSegmentStoreContract('multi (postgres, mysql, redis)', async () =>
    multiHarness(await Promise.all([postgresHarness(), mysqlHarness(), redisHarness()])),
  ),
);

/** A memory store that can be switched off, as a crashed server would be. */
class SwitchableStore implements SegmentStore {
  readonly kind = 'switchable';
  down = false;
  calls = 0;
  constructor(readonly inner = new MemorySegmentStore()) {}
  private async gate<T>(fn: () => Promise<T>): Promise<T> {
    this.calls++;
    if (this.down) throw new UnavailableError('STORE_UNAVAILABLE', 'switched off', { retryAfterMs: 1000 });
    return fn();
  }
  init(): Promise<void> {
    return this.gate(() => this.inner.init());
  }
  allocate(tag: string, step?: number): Promise<Allocation> {
    return this.gate(() => this.inner.allocate(tag, step));
  }
  getTag(tag: string): Promise<TagInfo | undefined> {
    return this.gate(() => this.inner.getTag(tag));
  }
  listTags(): Promise<TagInfo[]> {
    return this.gate(() => this.inner.listTags());
  }
  createTag(t: NewTag): Promise<TagInfo> {
    return this.gate(() => this.inner.createTag(t));
  }
  updateTag(tag: string, u: TagUpdate): Promise<TagInfo> {
    return this.gate(() => this.inner.updateTag(tag, u));
  }
  deleteTag(tag: string): Promise<void> {
    return this.gate(() => this.inner.deleteTag(tag));
  }
  fence(tag: string, to: bigint): Promise<TagInfo> {
    return this.gate(() => this.inner.fence(tag, to));
  }
  giveBack(tag: string, from: bigint, expect: GiveBackExpectation): Promise<boolean> {
    return this.gate(() => this.inner.giveBack(tag, from, expect));
  }
  ping(): Promise<void> {
    return this.gate(() => this.inner.ping());
  }
  async close(): Promise<void> {}
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as SequoiaError).code;
  }
}

function set(n: number, downCooldownMs = 60_000): { stores: SwitchableStore[]; multi: MultiSegmentStore } {
  const stores = Array.from({ length: n }, () => new SwitchableStore());
  return { stores, multi: new MultiSegmentStore(stores, { downCooldownMs }) };
}

describe('MultiSegmentStore', () => {
  it('store i hands out only IDs ≡ i (mod N), round-robin', async () => {
    const { multi } = set(3);
    await multi.init();
    await multi.createTag({ tag: 't', step: 5, start: 1n });
    const allocs: Allocation[] = [];
    for (let k = 0; k < 9; k++) allocs.push(await multi.allocate('t'));
    const offsets = allocs.map((a) => a.offset);
    expect(new Set(offsets.slice(0, 3))).toEqual(new Set([0, 1, 2]));
    for (const a of allocs) {
      expect(a.stride).toBe(3);
      for (const id of idsOf(a)) expect(Number(id % 3n)).toBe(a.offset);
    }
    const ids = allocs.flatMap(idsOf).map(String);
    expect(new Set(ids).size).toBe(45);
    expect(allocs.flatMap(idsOf).every((id) => id >= 1n)).toBe(true);
  });

  it('the first IDs of every class are the start and just above it', async () => {
    const { multi } = set(3);
    await multi.init();
    await multi.createTag({ tag: 't', step: 2, start: 10n });
    const firsts = [];
    for (let k = 0; k < 3; k++) firsts.push(idsOf(await multi.allocate('t'))[0]);
    expect(firsts.sort()).toEqual([10n, 11n, 12n]);
  });

  it('fails over when a store is down and throws STORE_UNAVAILABLE only when all are', async () => {
    const { stores, multi } = set(3);
    await multi.init();
    await multi.createTag({ tag: 't', step: 10 });
    (stores[1] as SwitchableStore).down = true;
    const seen = new Set<number | undefined>();
    for (let k = 0; k < 6; k++) seen.add((await multi.allocate('t')).offset);
    expect(seen).toEqual(new Set([0, 2]));
    (stores[0] as SwitchableStore).down = true;
    (stores[2] as SwitchableStore).down = true;
    expect(await codeOf(multi.allocate('t'))).toBe('STORE_UNAVAILABLE');
    (stores[2] as SwitchableStore).down = false;
    expect((await multi.allocate('t')).offset).toBe(2);
  });

  it('a recently failed store is tried last, not first', async () => {
    const { stores, multi } = set(2);
    await multi.init();
    await multi.createTag({ tag: 't', step: 10 });
    const s0 = stores[0] as SwitchableStore;
    s0.down = true;
    await multi.allocate('t'); // marks #0 down (or uses #1 directly)
    await multi.allocate('t');
    const before = s0.calls;
    for (let k = 0; k < 4; k++) expect((await multi.allocate('t')).offset).toBe(1);
    expect(s0.calls).toBe(before);
  });

  it('a store down at creation gets the tag lazily, above every counter elsewhere', async () => {
    const { stores, multi } = set(3, 0);
    await multi.init();
    const s2 = stores[2] as SwitchableStore;
    s2.down = true;
    await multi.createTag({ tag: 't', step: 10, start: 1n, description: 'd' });
    expect(await s2.inner.getTag('t')).toBeUndefined();
    const before: Allocation[] = [];
    for (let k = 0; k < 4; k++) before.push(await multi.allocate('t'));
    await multi.fence('t', 10_000n).catch(() => {}); // fences #0 and #1; #2 is down
    s2.down = false;
    const after: Allocation[] = [];
    for (let k = 0; k < 6; k++) after.push(await multi.allocate('t'));
    expect(after.some((a) => a.offset === 2)).toBe(true);
    expect(await s2.inner.getTag('t')).toMatchObject({ step: 10, description: 'd' });
    for (const a of after) expect(idsOf(a).every((id) => id >= 10_000n)).toBe(true);
    const all = [...before, ...after].flatMap(idsOf).map(String);
    expect(new Set(all).size).toBe(all.length);
  });

  it('a missing tag is TAG_NOT_FOUND only when every store says so', async () => {
    const { stores, multi } = set(2);
    await multi.init();
    expect(await codeOf(multi.allocate('nope'))).toBe('TAG_NOT_FOUND');
    expect(await multi.getTag('nope')).toBeUndefined();
    (stores[0] as SwitchableStore).down = true;
    expect(await codeOf(multi.allocate('nope'))).toBe('STORE_UNAVAILABLE');
    expect(await codeOf(multi.getTag('nope'))).toBe('STORE_UNAVAILABLE');
  });

  it('getTag and listTags merge the reachable stores and hide the meta row', async () => {
    const { stores, multi } = set(2);
    await multi.init();
    await multi.createTag({ tag: 'a', step: 3, start: 1n });
    await multi.createTag({ tag: 'b', step: 4, start: 1n });
    expect((await multi.listTags()).map((t) => t.tag)).toEqual(['a', 'b']);
    expect(await multi.getTag(MULTI_META_TAG)).toBeUndefined();
    (stores[1] as SwitchableStore).down = true;
    expect((await multi.listTags()).map((t) => t.tag)).toEqual(['a', 'b']);
    expect(await multi.getTag('a')).toMatchObject({ tag: 'a', step: 3 });
    (stores[0] as SwitchableStore).down = true;
    expect(await codeOf(multi.listTags())).toBe('STORE_UNAVAILABLE');
    expect(await codeOf(multi.ping())).toBe('STORE_UNAVAILABLE');
    (stores[0] as SwitchableStore).down = false;
    await expect(multi.ping()).resolves.toBeUndefined();
  });

  it('delete and fence need every store; they report the unreachable ones', async () => {
    const { stores, multi } = set(2);
    await multi.init();
    await multi.createTag({ tag: 't', step: 3 });
    (stores[1] as SwitchableStore).down = true;
    expect(await codeOf(multi.fence('t', 100n))).toBe('STORE_UNAVAILABLE');
    expect(await codeOf(multi.deleteTag('t'))).toBe('STORE_UNAVAILABLE');
    (stores[1] as SwitchableStore).down = false;
    await multi.deleteTag('t');
    expect(await multi.getTag('t')).toBeUndefined();
    expect(await codeOf(multi.deleteTag('t'))).toBe('TAG_NOT_FOUND');
  });

  it('refuses a store configured with another N or position', async () => {
    const a = new MemorySegmentStore();
    const b = new MemorySegmentStore();
    await new MultiSegmentStore([a, b]).init();
    // swapped order: the message says where each store stands and where the procedure is (not a source file)
    expect(await codeOf(new MultiSegmentStore([b, a]).init())).toBe('INVALID_ARGUMENT');
    await expect(new MultiSegmentStore([b, a]).init()).rejects.toThrow(
      /records its place .* \(index counts from 0\), but the --store list puts it at index 0 of 2; .*"Growing the set" in docs\/operations.md/,
    );
    // grown without the procedure
    expect(await codeOf(new MultiSegmentStore([a, b, new MemorySegmentStore()]).init())).toBe('INVALID_ARGUMENT');
    // the same configuration again is fine
    await expect(new MultiSegmentStore([a, b]).init()).resolves.toBeUndefined();
    // a store that was down at init is checked when it first answers
    const c = new SwitchableStore(b); // b records index 1 of 2; here it would be index 1 of 2 too...
    const d = new SwitchableStore(a); // ...but a records index 0, placed at index 1
    d.down = true;
    const m = new MultiSegmentStore([c, d], { downCooldownMs: 0 });
    await expect(m.init()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' }); // c (= b) is at index 0
    const e = new MemorySegmentStore();
    const late = new SwitchableStore(new MemorySegmentStore());
    await new MultiSegmentStore([new MemorySegmentStore(), late.inner]).init(); // late.inner: index 1 of 2
    late.down = true;
    const m2 = new MultiSegmentStore([late, e], { downCooldownMs: 0 });
    await m2.init(); // only e answers: fine
    await m2.createTag({ tag: 't', step: 1 });
    late.down = false;
    expect(await codeOf(m2.allocate('t').then(() => m2.allocate('t')))).toBe('INVALID_ARGUMENT');
  });

  it('a store that was down at init is checked when it comes back', async () => {
    const stores = [new SwitchableStore(), new SwitchableStore()];
    await new MultiSegmentStore([stores[1] as SwitchableStore, stores[0] as SwitchableStore]).init(); // records swapped places
    (stores[1] as SwitchableStore).down = true;
    const m = new MultiSegmentStore(stores);
    await expect(m.init()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' }); // #0 is reachable and misplaced
  });

  it('growing N follows the documented rule: fence the new set above the old maximum', async () => {
    const old = set(2);
    await old.multi.init();
    await old.multi.createTag({ tag: 't', step: 10 });
    const handed: Allocation[] = [];
    for (let k = 0; k < 5; k++) handed.push(await old.multi.allocate('t'));
    const h = (await old.multi.getTag('t'))?.maxId as bigint;
    expect(handed.flatMap(idsOf).every((id) => id < h)).toBe(true);
    // new generation of 3 stores (two reused): rewrite the meta rows, then fence to H
    const third = new SwitchableStore();
    const stores = [...old.stores, third];
    for (const [i, s] of stores.entries()) {
      await s.inner.deleteTag(MULTI_META_TAG).catch(() => {});
      await s.inner.createTag({ tag: MULTI_META_TAG, step: 1, start: 0n, description: JSON.stringify({ n: 3, index: i }) });
    }
    const grown = new MultiSegmentStore(stores);
    await grown.init();
    await grown.fence('t', h);
    const fresh: Allocation[] = [];
    for (let k = 0; k < 6; k++) fresh.push(await grown.allocate('t'));
    expect(fresh.flatMap(idsOf).every((id) => id >= h)).toBe(true);
  });

  it('never hands out an ID past 2^63-1 in any class', async () => {
    const { multi } = set(3);
    await multi.init();
    await multi.createTag({ tag: 't', step: 2, start: (1n << 63n) - 8n });
    const ok: Allocation[] = [];
    for (;;) {
      try {
        ok.push(await multi.allocate('t'));
      } catch (e) {
        expect((e as SequoiaError).code).toBe('ID_SPACE_EXHAUSTED');
        break;
      }
    }
    const ids = ok.flatMap(idsOf);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.every((id) => id <= (1n << 63n) - 1n && id >= (1n << 63n) - 8n)).toBe(true);
  });

  it('createStore builds a set from a comma-separated list', async () => {
    const s = await createStore('memory:, memory:,memory:');
    expect(s).toBeInstanceOf(MultiSegmentStore);
    expect((s as MultiSegmentStore).n).toBe(3);
    await expect(createStore('memory:,,memory:')).rejects.toThrow(/store/);
    await expect(createStore('ftp://x')).rejects.toThrow(/^store: unsupported/);
  });
});
