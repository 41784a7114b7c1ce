/** Strict tags: concurrent requests coalesced into one store operation per batch; IDs follow the store's commit order across servers. */
import { mkdtempSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MultiSegmentStore } from '../adapters/multi/multi-segment-store.js';
import { PostgresSegmentStore } from '../adapters/postgres/postgres-segment-store.js';
import { SqliteSegmentStore } from '../adapters/sqlite/sqlite-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { resolveConfig } from '../app/config.js';
import { UnavailableError } from '../core/errors.js';
import type { HighWaterMark } from '../core/segment/rollback-guard.js';
import type { Allocation, SegmentStore } from '../ports/segment-store.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import { postgresHarness, probePostgres } from '../../test/contract/backends.js';
import { describeWithService } from '../../test/helpers/services.js';
import { IdService } from './id-service.js';
import { StrictTagAllocator } from './strict-tag-allocator.js';
import type { TagAllocator } from './tag-allocator.js';

interface Timed {
  id: bigint;
  sent: number;
  got: number;
}

/**
 * Linearizability of the answers: whenever a request was answered before
 * another was sent, its ID is smaller. (Sort by ID; a later ID must never
 * have been answered before an earlier ID's request was sent.)
 */
function expectOrdered(results: Timed[]): void {
  const byId = [...results].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  expect(new Set(byId.map((r) => r.id)).size).toBe(results.length);
  let minGotAfter = Number.POSITIVE_INFINITY;
  for (let k = byId.length - 1; k >= 0; k--) {
    const r = byId[k] as Timed;
    // every r' with a larger ID must not have been answered before r was sent
    expect(minGotAfter >= r.sent).toBe(true);
    minGotAfter = Math.min(minGotAfter, r.got);
  }
}

async function timed(s: IdService, tag: string): Promise<Timed> {
  const sent = performance.now();
  const id = BigInt(await s.next(tag));
  return { id, sent, got: performance.now() };
}

/** `clients` concurrent loops over the services, `perClient` requests each. */
async function hammer(services: IdService[], tag: string, clients: number, perClient: number): Promise<Timed[]> {
  const out: Timed[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < perClient; i++) out.push(await timed(services[(c + i) % services.length] as IdService, tag));
    }),
  );
  return out;
}

function strictService(store: SegmentStore, tags = ['seq']): IdService {
  return new IdService({ store, marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0, strictTags: tags });
}

/** Commits at once, answers after a delay the test picks: answers arrive out of commit order. */
class LateAnswerStore extends MemorySegmentStore {
  delays: number[] = [];
  override async allocate(tag: string, step?: number): Promise<Allocation> {
    const a = await super.allocate(tag, step);
    const d = this.delays.shift() ?? 0;
    if (d > 0) await new Promise((r) => setTimeout(r, d));
    return a;
  }
}

/** Counts allocate calls and their steps; `hold()` keeps the next answers back until `release()`. */
class CountingStore extends MemorySegmentStore {
  calls: number[] = [];
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  failNext = 0;
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open?.();
    this.gate = undefined;
  }
  override async allocate(tag: string, step?: number): Promise<Allocation> {
    this.calls.push(step ?? -1);
    const g = this.gate;
    if (g) await g;
    if (this.failNext > 0) {
      this.failNext--;
      throw new UnavailableError('STORE_UNAVAILABLE', 'store down');
    }
    return super.allocate(tag, step);
  }
}

/** Counts mark writes; `failing` makes them throw, as a full disk would. */
class CountingMarks extends MemoryHighWaterMarkStore {
  updates = 0;
  failing = false;
  override async update(
    tag: string,
    change: (current: HighWaterMark | undefined) => HighWaterMark | undefined,
  ): Promise<HighWaterMark | undefined> {
    this.updates++;
    if (this.failing) throw new Error('ENOSPC: no space left on device');
    return super.update(tag, change);
  }
}

/** Mark records that wait while held (a slow fsync), or each for its own delay; `waiting` counts those not yet recorded, `calls` all. */
class SlowMarks extends MemoryHighWaterMarkStore {
  delays: number[] = [];
  waiting = 0;
  calls = 0;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open?.();
    this.gate = undefined;
  }
  override async update(
    tag: string,
    change: (current: HighWaterMark | undefined) => HighWaterMark | undefined,
  ): Promise<HighWaterMark | undefined> {
    this.calls++;
    this.waiting++;
    const d = this.delays.shift() ?? 0;
    if (d > 0) await new Promise((r) => setTimeout(r, d));
    if (this.gate) await this.gate;
    this.waiting--;
    return super.update(tag, change);
  }
}

/** `strictSeq` over `marks`, answering them too. */
async function strictOn<M extends HighWaterMarkStore>(marks: M) {
  return { ...(await strictSeq({ marks })), marks };
}

const settle = () => new Promise((r) => setImmediate(r));

/** A started service whose tag `seq` is strict, on a store that counts its writes. */
async function strictSeq(
  o: { readonly marks?: HighWaterMarkStore; readonly start?: bigint } = {},
): Promise<{ store: CountingStore; s: IdService; a: TagAllocator }> {
  const store = new CountingStore();
  await store.createTag({ tag: 'seq', ...(o.start === undefined ? {} : { start: o.start }) });
  const s = new IdService({ store, marks: o.marks ?? new MemoryHighWaterMarkStore(), refreshIntervalMs: 0, strictTags: ['seq'] });
  await s.start();
  return { store, s, a: await s.allocator('seq') };
}

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await settle();
  expect(ok()).toBe(true);
}

describe('strict tags: coalescing', () => {
  it('N concurrent requests share one store write and one mark record (not N)', async () => {
    const { store, marks, s, a } = await strictOn(new CountingMarks());
    const ids = await Promise.all(Array.from({ length: 50 }, () => Promise.resolve(a.next())));
    expect(ids).toEqual(Array.from({ length: 50 }, (_, i) => i + 1)); // in arrival order
    expect(store.calls).toEqual([50]);
    expect(marks.updates).toBe(1);
    expect((await marks.get('seq'))?.mark).toBe(51n);
    expect(a.snapshot()).toMatchObject({ loads: 1, issued: 50 });
    await s.close();
  });

  it('batch counts are summed, and each request gets its own consecutive slice, all or nothing', async () => {
    const { store, s, a } = await strictSeq();
    const got = await Promise.all([a.nextMany(3), a.next(), a.nextMany(5), a.nextMany(1)].map((p) => Promise.resolve(p)));
    expect(got).toEqual([[1, 2, 3], 4, [5, 6, 7, 8, 9], [10]]);
    expect(store.calls).toEqual([10]);
    await s.close();
  });

  it('while one write is in flight, the next batch collects and goes as one write when it answers', async () => {
    const { store, s, a } = await strictSeq();
    store.hold();
    const first = Promise.resolve(a.next());
    await settle();
    expect(store.calls).toEqual([1]); // in flight
    const later = Array.from({ length: 20 }, (_, i) => Promise.resolve(i % 4 === 0 ? a.nextMany(2) : a.next()));
    await settle();
    await settle();
    expect(store.calls).toEqual([1]); // collecting, not sent
    store.release();
    expect(await first).toBe(1);
    const rest = await Promise.all(later);
    expect(store.calls).toEqual([1, 25]);
    expect(rest.flat()).toEqual(Array.from({ length: 25 }, (_, i) => i + 2));
    await s.close();
  });

  it('a failed write fails every request of its batch (no IDs, STORE_UNAVAILABLE); the next batch is served', async () => {
    const { store, s, a } = await strictSeq();
    store.failNext = 1;
    const r = await Promise.allSettled(Array.from({ length: 10 }, () => Promise.resolve(a.nextMany(2))));
    expect(r.every((x) => x.status === 'rejected' && (x.reason as { code: string }).code === 'STORE_UNAVAILABLE')).toBe(true);
    expect(store.calls).toEqual([20]);
    expect(await Promise.all([a.next(), a.next()].map((p) => Promise.resolve(p)))).toEqual([1, 2]);
    await s.close();
  });

  it('a mark that cannot be recorded fails the batch; nothing is handed out without its mark', async () => {
    const { marks, s, a } = await strictOn(new CountingMarks());
    marks.failing = true;
    const r = await Promise.allSettled(Array.from({ length: 5 }, () => Promise.resolve(a.next())));
    expect(r.map((x) => x.status === 'rejected' && (x.reason as { code: string }).code)).toEqual(Array(5).fill('STORE_UNAVAILABLE'));
    marks.failing = false;
    expect(await a.next()).toBe(6); // a gap, never a repeat
    await s.close();
  });

  it('near 2^63-1 a batch that would pass it is split: requests that still fit are served, in order', async () => {
    // IDs 2^63-4 .. 2^63-2 left (max_id may reach 2^63-1)
    const { store, s, a } = await strictSeq({ start: 2n ** 63n - 4n });
    const r = await Promise.allSettled([a.nextMany(2), a.nextMany(5), a.nextMany(1)].map((p) => Promise.resolve(p)));
    expect(store.calls).toEqual([8, 2, 5, 1]);
    expect(r[0]).toMatchObject({ status: 'fulfilled', value: [2n ** 63n - 4n, 2n ** 63n - 3n] });
    expect(r[1]).toMatchObject({ status: 'rejected', reason: { code: 'ID_SPACE_EXHAUSTED' } });
    expect(r[2]).toMatchObject({ status: 'fulfilled', value: [2n ** 63n - 2n] });
    await s.close();
  });

  it("the next batch's store write goes out while the previous batch's mark is still being recorded", async () => {
    const { store, marks, s, a } = await strictOn(new SlowMarks());
    marks.hold();
    const first = Promise.resolve(a.nextMany(3));
    await until(() => marks.waiting === 1);
    const second = Promise.resolve(a.next());
    await until(() => store.calls.length === 2); // two batches in flight: one at the marks, one past the store
    marks.release();
    expect(await first).toEqual([1, 2, 3]);
    expect(await second).toBe(4);
    await s.close();
  });

  it('a store faster than the marks: its writes go on while a mark is recorded, and the batches answered meanwhile share the next record', async () => {
    const { store, marks, s, a } = await strictOn(new SlowMarks());
    marks.hold();
    const first = Promise.resolve(a.next());
    await until(() => marks.waiting === 1);
    const later: Promise<unknown>[] = [];
    for (let i = 0; i < 10; i++) {
      later.push(Promise.resolve(a.next())); // one per turn of the event loop, as requests come over sockets
      await until(() => store.calls.length === i + 2); // sent at once: no write waits for a mark
    }
    expect(marks.waiting).toBe(1); // not ten records queued behind the first, each with its own fsync
    marks.release();
    expect([await first, ...(await Promise.all(later))]).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(marks.calls).toBe(2); // the first batch's, then one for the ten answered while it was recorded
    expect((await marks.get('seq'))?.mark).toBe(12n);
    await s.close();
  });

  it('batches recorded together are each judged by their own floor: a restore between two of them refuses the later one only', async () => {
    const { store, marks, s, a } = await strictOn(new SlowMarks());
    expect(await a.nextMany(10)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1)); // the marks say 11
    marks.hold();
    const held = Promise.resolve(a.next()); // [11, 12): its record is held
    await until(() => marks.waiting === 1);
    const good = Promise.resolve(a.nextMany(3)); // [12, 15): answered, waits for the next record
    await until(() => store.calls.length === 3);
    store.restore('seq', 13n); // an old backup: the next answer, [13, 14), repeats an ID of [12, 15)
    const bad = Promise.resolve(a.next());
    await until(() => store.calls.length === 4);
    marks.release();
    expect(await held).toBe(11);
    expect(await good).toEqual([12, 13, 14]);
    await expect(bad).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await expect(Promise.resolve(a.next())).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' }); // refused until a fence
    await s.close();
  });

  it('batches answer in the order they were sent, even when a later batch has its mark first', async () => {
    const { store, marks, s, a } = await strictOn(new SlowMarks());
    marks.delays = [40, 0];
    const answered: string[] = [];
    store.hold();
    const first = Promise.resolve(a.next()).then((id) => answered.push(`first ${id}`));
    await until(() => store.calls.length === 1);
    const second = Promise.resolve(a.next()).then((id) => answered.push(`second ${id}`));
    await settle();
    store.release();
    await Promise.all([first, second]);
    expect(store.calls).toEqual([1, 1]);
    expect(answered).toEqual(['first 1', 'second 2']);
    await s.close();
  });

  it("a store restored between a batch's answer and the next batch's write is caught, although that batch's mark is not recorded yet", async () => {
    const { store, marks, s, a } = await strictOn(new SlowMarks());
    expect(await a.nextMany(10)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1)); // the marks say 11
    marks.hold();
    const first = Promise.resolve(a.nextMany(5)); // [11, 16): answered by the store, its mark waits
    await until(() => marks.waiting === 1);
    store.restore('seq', 12n); // an old backup: the next answer, [12, 13), repeats an ID of [11, 16)
    const second = Promise.resolve(a.next());
    await until(() => store.calls.length === 3 && marks.waiting === 1); // its store write went out; its mark waits for the first's
    marks.release();
    expect(await first).toEqual([11, 12, 13, 14, 15]);
    await expect(second).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await s.close();
  });

  it('a rollback seen by one batch refuses it and the batches behind it', async () => {
    const { store, s, a } = await strictSeq();
    await Promise.all(Array.from({ length: 30 }, () => Promise.resolve(a.next())));
    store.restore('seq', 5n);
    store.hold();
    const b1 = Array.from({ length: 3 }, () => Promise.resolve(a.next()));
    await settle();
    const b2 = Array.from({ length: 3 }, () => Promise.resolve(a.next()));
    store.release();
    const r = await Promise.allSettled([...b1, ...b2]);
    expect(r.every((x) => x.status === 'rejected' && (x.reason as { code: string }).code === 'STORE_ROLLBACK_DETECTED')).toBe(true);
    await s.close();
  });
});

describe('strict tags', () => {
  it('every request is one store operation of one ID: no buffer, no prefetch', async () => {
    const store = new MemorySegmentStore();
    await store.createTag({ tag: 'seq', step: 1000 });
    await store.createTag({ tag: 'plain', step: 1000 });
    const s = strictService(store);
    await s.start();
    expect(s.isStrict('seq')).toBe(true);
    expect(await s.allocator('seq')).toBeInstanceOf(StrictTagAllocator);
    expect(await s.next('seq')).toBe(1);
    expect((await store.getTag('seq'))?.maxId).toBe(2n);
    expect(await s.next('seq')).toBe(2);
    expect(await s.nextMany('seq', 5)).toEqual([3, 4, 5, 6, 7]);
    expect((await store.getTag('seq'))?.maxId).toBe(8n);
    // an ordinary tag still buffers a whole range
    expect(await s.next('plain')).toBe(1);
    expect((await store.getTag('plain'))?.maxId).toBeGreaterThanOrEqual(1001n);
    const snap = s.snapshot().find((x) => x.tag === 'seq');
    expect(snap).toMatchObject({ remaining: 0, loads: 3, issued: 7, nextReady: false });
    await s.close();
    expect((await store.getTag('seq'))?.maxId).toBe(8n); // nothing to give back
  });

  it('concurrent requests on one server: unique and in commit order', async () => {
    const store = new MemorySegmentStore();
    await store.createTag({ tag: 'seq' });
    const s = strictService(store);
    await s.start();
    const r = await hammer([s], 'seq', 16, 50);
    expectOrdered(r);
    expect(r.map((x) => x.id).sort((a, b) => Number(a - b))).toEqual(Array.from({ length: 800 }, (_, i) => BigInt(i + 1)));
    await s.close();
  });

  it('answers arriving out of commit order do not trip the rollback guard; a real rollback does', async () => {
    const store = new LateAnswerStore();
    await store.createTag({ tag: 'seq' });
    const s = strictService(store);
    await s.start();
    store.delays = [30, 0, 15, 0];
    const ids = await Promise.all([0, 1, 2, 3].map(() => Promise.resolve(s.next('seq'))));
    expect(ids).toEqual([1, 2, 3, 4]);
    store.restore('seq', 2n); // an old backup
    await expect(Promise.resolve(s.next('seq'))).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await expect(Promise.resolve(s.next('seq'))).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await s.fence('seq', 100n);
    expect(await s.next('seq')).toBe(100);
    await s.close();
  });

  it('two workers of one server (one state directory): a restore is refused by both, and a fence by one reopens the other', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-strict-'));
    const path = join(dir, 'ids.db');
    const worker = () =>
      new IdService({
        store: new SqliteSegmentStore({ path }),
        marks: new StateDir(join(dir, 'state')),
        refreshIntervalMs: 0,
        strictTags: ['seq'],
      });
    const a = worker();
    const b = worker();
    await a.start();
    await b.start();
    await a.createTag({ tag: 'seq' });
    expect(await b.next('seq')).toBe(1);
    for (let i = 0; i < 50; i++) await a.next('seq'); // traffic skewed to worker a: up to 51
    new Database(path).prepare("UPDATE sequoia_alloc SET max_id = 2 WHERE tag = 'seq'").run(); // an old backup
    await expect(Promise.resolve(b.next('seq'))).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await expect(Promise.resolve(a.next('seq'))).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await a.fence('seq', 1000n);
    expect(await a.next('seq')).toBe(1000);
    await new Promise((r) => setTimeout(r, 1100)); // b re-reads the fence epoch at most once a second
    await expect(Promise.resolve(b.next('seq'))).resolves.toBe(1001);
    await a.close();
    await b.close();
  });

  it('two servers on one SQLite file: sequential requests alternate servers and still rise; concurrent ones stay ordered', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sequoia-strict-')), 'ids.db');
    const a = strictService(new SqliteSegmentStore({ path }));
    const b = strictService(new SqliteSegmentStore({ path }));
    await a.start();
    await b.start();
    await a.createTag({ tag: 'seq', step: 500 });
    let last = 0n;
    for (let i = 0; i < 40; i++) {
      const id = BigInt(await (i % 2 ? a : b).next('seq'));
      expect(id).toBe(last + 1n);
      last = id;
    }
    expectOrdered(await hammer([a, b], 'seq', 8, 40));
    await a.close();
    await b.close();
  });

  it('refuses a multi-store set (it cannot order IDs across stores)', async () => {
    const s = strictService(new MultiSegmentStore([new MemorySegmentStore(), new MemorySegmentStore()]));
    await expect(s.start()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/strictTags/) });
  });

  it('config: strictTags from a comma-separated flag or env, or a JSON array; bad tags are named', () => {
    expect(resolveConfig({ strictTags: 'tx, msg' }, {}, undefined).strictTags).toEqual(['tx', 'msg']);
    expect(resolveConfig({}, { SEQUOIA_STRICT_TAGS: 'a' }, undefined).strictTags).toEqual(['a']);
    expect(resolveConfig({}, {}, undefined).strictTags).toBeUndefined();
    expect(() => resolveConfig({ strictTags: 'ok,bad tag' }, {}, undefined)).toThrow(/strictTags \(from --strict-tags\)/);
  });
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('strict tags on PostgreSQL', () => {
  it('two servers sharing one table: unique and in commit order under concurrency', async () => {
    const h = await postgresHarness();
    const table = (h.store as PostgresSegmentStore).table;
    const a = strictService(h.store);
    const bStore = new PostgresSegmentStore({ connectionString: (h.url as string).replace(/[?&]table=[^&]*/, ''), table });
    const b = strictService(bStore);
    try {
      await a.start();
      await b.start();
      await a.createTag({ tag: 'seq', step: 1000 });
      let last = 0n;
      for (let i = 0; i < 20; i++) {
        const id = BigInt(await (i % 2 ? a : b).next('seq'));
        expect(id).toBe(last + 1n);
        last = id;
      }
      const r = await hammer([a, b], 'seq', 16, 25);
      expectOrdered(r);
      expect(r.every((x) => x.id > last)).toBe(true);
    } finally {
      await b.close();
      await a.close().catch(() => {});
      await h.cleanup();
    }
  });
});
