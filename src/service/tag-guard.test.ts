import { describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { type SequoiaError, UnavailableError } from '../core/errors.js';
import { checkShared, type AcceptedRange, type GuardVerdict, type HighWaterMark } from '../core/segment/rollback-guard.js';
import { silentLogger } from '../core/silent-logger.js';
import type { Logger } from '../ports/logger.js';
import { ControlledStore, ManualClock, tick } from '../../test/helpers/fakes.js';
import { BufferedTagAllocator } from './buffered-tag-allocator.js';
import { IdService } from './id-service.js';
import { StrictTagAllocator } from './strict-tag-allocator.js';
import { DEFAULT_ALLOCATOR_OPTIONS, type TagAllocator, type TagAllocatorDeps } from './tag-allocator.js';
import { type Floor, TagGuard } from './tag-guard.js';

async function setup() {
  const store = new MemorySegmentStore();
  await store.createTag({ tag: 't' });
  const clock = new ManualClock();
  let lifted = 0;
  const marks = new MemoryHighWaterMarkStore();
  const guard = new TagGuard('t', { store, marks, clock, logger: silentLogger }, () => lifted++);
  return { store, clock, marks, guard, lifted: () => lifted };
}

const range = (start: bigint, end: bigint, fenceEpoch = 0) => ({ start, end, fenceEpoch, stride: 1, offset: 0 });

/** Admits [0, 100), then an answer below it: the guard refuses the tag at fence epoch 0. */
async function trip(guard: TagGuard): Promise<void> {
  expect(await guard.admit(range(0n, 100n), await guard.floor())).toEqual({ ok: true });
  const floor: Floor = await guard.floor();
  expect(await guard.admit(range(50n, 60n), floor)).toMatchObject({ ok: false, refusal: { code: 'STORE_ROLLBACK_DETECTED' } });
}

describe('TagGuard', () => {
  it('lifts a rollback refusal once the store is fenced past the trip, reading the store at most once a second', async () => {
    const { store, clock, guard, lifted } = await setup();
    await trip(guard);
    expect(guard.current?.code).toBe('STORE_ROLLBACK_DETECTED');
    expect(await guard.recheckFence()).toBe(false);
    await store.fence('t', 0n);
    expect(await guard.recheckFence()).toBe(false); // read less than a second ago
    clock.advance(1000);
    expect(await guard.recheckFence()).toBe(true);
    expect(guard.current).toBeUndefined();
    expect(lifted()).toBe(1);
  });

  it('times the fence re-check on the monotonic clock: a wall clock stepped back a day does not hold the refusal', async () => {
    const { store, clock, guard } = await setup();
    clock.step(86_400_000); // a day ahead when the rollback is seen
    await trip(guard);
    expect(await guard.recheckFence()).toBe(false);
    clock.step(-86_400_000); // NTP steps the clock back
    await store.fence('t', 0n);
    clock.advance(1000);
    expect(await guard.recheckFence()).toBe(true);
  });

  it('stays refused once closed: a rollback refusal is kept, and neither a fence nor lift() reopens it', async () => {
    const { store, clock, guard, lifted } = await setup();
    await trip(guard);
    guard.close();
    expect(guard.current?.code).toBe('STORE_ROLLBACK_DETECTED');
    await store.fence('t', 0n);
    clock.advance(1000);
    expect(await guard.recheckFence()).toBe(false);
    guard.lift();
    expect(guard.closed).toBe(true);
    expect(guard.current?.code).toBe('STORE_ROLLBACK_DETECTED');
    expect(lifted()).toBe(0);
  });

  it('refuses a closed tag as not found when nothing else refused it, or with the reason it was closed for', async () => {
    const { guard } = await setup();
    expect(guard.current).toBeUndefined();
    guard.close();
    expect(guard.current?.code).toBe('TAG_NOT_FOUND');
    await expect(guard.floor()).rejects.toMatchObject({ code: 'TAG_NOT_FOUND' });
    const other = (await setup()).guard;
    other.close(new UnavailableError('SHUTTING_DOWN', 'the server is shutting down; retry'));
    await expect(other.floor()).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
  });

  it('holds a trip recorded in a mark until the store is fenced past its epoch', async () => {
    const { store, clock, marks } = await setup();
    await marks.put('t', { mark: 100n, trippedAtEpoch: 0 });
    const make = () => new TagGuard('t', { store, marks, clock, logger: silentLogger });
    await expect(make().floor()).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
    await store.fence('t', 100n);
    expect((await make().floor()).get('t')).toEqual({ mark: 100n, trippedAtEpoch: 0 });
    await marks.put('t', { mark: 100n, trippedAtEpoch: 1 }); // tripped again after that fence
    await expect(make().floor()).rejects.toMatchObject({ code: 'STORE_ROLLBACK_DETECTED' });
  });

  it('leaves the whole check and record to a marks store that offers admitRange: no change function of its own runs in the write', async () => {
    const store = new MemorySegmentStore();
    await store.createTag({ tag: 't' });
    const marks = new ThreadSideMarks();
    const guard = new TagGuard('t', { store, marks, clock: new ManualClock(), logger: silentLogger });
    expect(await guard.admit(range(0n, 100n), await guard.floor())).toEqual({ ok: true });
    expect(await guard.admit(range(50n, 60n), await guard.floor())).toMatchObject({
      ok: false,
      refusal: { code: 'STORE_ROLLBACK_DETECTED' },
    });
    expect(await marks.get('t')).toEqual({ mark: 100n, trippedAtEpoch: 0 });
    expect(marks.admits).toBe(2);
    expect(marks.changesFromCaller).toBe(0);
  });

  it('admitAll: answers recorded together, each judged by its own floor, one record for the highest end; nothing recorded when one fails', async () => {
    const { marks, guard } = await setup();
    const above = (floor: Floor, mark: bigint): Floor => new Map(floor).set('t', { mark });
    const f0 = await guard.floor();
    // [0, 10) then [10, 30): the second's floor is the first's end (its mark not yet recorded).
    expect(
      await guard.admitAll([
        { range: range(0n, 10n), floor: f0 },
        { range: range(10n, 30n), floor: above(f0, 10n) },
      ]),
    ).toEqual({ ok: true });
    expect(await marks.get('t')).toEqual({ mark: 30n });
    const f1 = await guard.floor();
    // The second answer lies below its own floor (a store restored between the two writes): not recorded here.
    expect(
      await guard.admitAll([
        { range: range(30n, 40n), floor: f1 },
        { range: range(35n, 45n), floor: above(f1, 40n) },
      ]),
    ).toBeUndefined();
    // Two fence epochs: not one record either.
    expect(
      await guard.admitAll([
        { range: range(30n, 40n), floor: f1 },
        { range: range(40n, 50n, 1), floor: above(f1, 40n) },
      ]),
    ).toBeUndefined();
    expect(await marks.get('t')).toEqual({ mark: 30n });
    // The first answer below the recorded mark: refused and tripped, as admit would.
    expect(
      await guard.admitAll([
        { range: range(20n, 25n), floor: f1 },
        { range: range(25n, 26n), floor: above(f1, 25n) },
      ]),
    ).toMatchObject({
      ok: false,
      refusal: { code: 'STORE_ROLLBACK_DETECTED' },
    });
    expect(await marks.get('t')).toEqual({ mark: 30n, trippedAtEpoch: 0 });
  });

  it('a give-back takes only its own range out of the marks, never under a trip', async () => {
    const { guard, marks } = await setup();
    await guard.admit(range(0n, 100n), await guard.floor());
    await marks.put('t', {
      mark: 200n,
      ranges: [
        [0n, 100n],
        [150n, 200n],
      ],
    }); // another worker allocated after us
    expect(await guard.lowerMarkFor(40n, 100n)).toBe(true);
    expect(await marks.get('t')).toEqual({
      mark: 200n,
      ranges: [
        [0n, 40n],
        [150n, 200n],
      ],
    });
    await marks.put('t', { mark: 100n });
    expect(await guard.lowerMarkFor(40n, 100n)).toBe(true);
    expect(await marks.get('t')).toEqual({ mark: 40n });
    await marks.put('t', { mark: 100n, trippedAtEpoch: 0 });
    expect(await guard.lowerMarkFor(40n, 100n)).toBe(false);
    expect(await marks.get('t')).toEqual({ mark: 100n, trippedAtEpoch: 0 });
  });
});

/**
 * Marks kept in another thread, as the state dir is in a server: `admitRange`
 * runs there; a change function handed to `update` would be called back.
 */
class ThreadSideMarks extends MemoryHighWaterMarkStore {
  admits = 0;
  changesFromCaller = 0;
  override update(
    tag: string,
    change: (current: HighWaterMark | undefined) => HighWaterMark | undefined,
  ): Promise<HighWaterMark | undefined> {
    this.changesFromCaller++;
    return super.update(tag, change);
  }
  async admitRange(
    tag: string,
    floor: HighWaterMark | undefined,
    start: bigint,
    end: bigint,
    epoch: number,
    generation?: string,
    parts?: readonly AcceptedRange[],
  ): Promise<GuardVerdict> {
    this.admits++;
    let verdict: GuardVerdict | undefined;
    await super.update(tag, (current) => (verdict = checkShared(floor, current, start, end, epoch, undefined, generation, parts)).record);
    return verdict as GuardVerdict;
  }
}

/** Marks kept "somewhere" a refusal names; `failing` makes writes throw, as a full disk would. */
class Marks extends MemoryHighWaterMarkStore {
  readonly where = 'state dir /srv/sequoia';
  failing = false;
  override async update(
    tag: string,
    change: (current: HighWaterMark | undefined) => HighWaterMark | undefined,
  ): Promise<HighWaterMark | undefined> {
    if (this.failing) throw new Error('ENOSPC: no space left on device');
    return super.update(tag, change);
  }
}

interface Line {
  level: string;
  obj: Record<string, unknown>;
  msg: string | undefined;
}

function recordingLogger(lines: Line[]): Logger {
  const at = (level: string) => (obj: object, msg?: string) => lines.push({ level, obj: obj as Record<string, unknown>, msg });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const MODES = [
  { mode: 'buffered', make: (deps: TagAllocatorDeps): TagAllocator => new BufferedTagAllocator('t', deps) },
  { mode: 'strict', make: (deps: TagAllocatorDeps): TagAllocator => new StrictTagAllocator('t', deps) },
] as const;

async function failureOf(p: unknown): Promise<SequoiaError> {
  try {
    await p;
  } catch (e) {
    return e as SequoiaError;
  }
  throw new Error('expected a failure, got IDs');
}

/** The same scenarios on every mode: the guard is one, so the answers, messages and log lines are one. */
describe.each(MODES)('the rollback guard in $mode mode', ({ mode, make }) => {
  async function world() {
    const store = new ControlledStore();
    await store.createTag({ tag: 't', step: 10 });
    const marks = new Marks();
    const clock = new ManualClock();
    const lines: Line[] = [];
    const allocator = () =>
      make({
        store,
        marks,
        clock,
        logger: recordingLogger(lines),
        options: { ...DEFAULT_ALLOCATOR_OPTIONS, loadTimeoutMs: 500, minRetryDelayMs: 20 },
      });
    const errors = () => lines.filter((l) => l.level === 'error');
    return { store, marks, clock, lines, errors, allocator };
  }

  it('a restored store is refused, across restarts, until a fence; the refusal names where the marks are kept, once in the log', async () => {
    const { store, clock, errors, allocator } = await world();
    const first = allocator();
    expect(await first.nextMany(5)).toEqual([1, 2, 3, 4, 5]);
    first.close();
    store.restore('t', 1n); // an old backup
    const a = allocator();
    const e = await failureOf(a.nextMany(1));
    expect(e.code).toBe('STORE_ROLLBACK_DETECTED');
    expect(e.message).toMatch(
      /^tag "t": store answered \[1, \d+\) below the high-water mark \d+ kept in state dir \/srv\/sequoia: restored from an older backup/,
    );
    expect((await failureOf(a.nextMany(1))).code).toBe('STORE_ROLLBACK_DETECTED');
    expect(errors()).toHaveLength(1);
    expect(errors()[0]).toMatchObject({ obj: { tag: 't', code: 'STORE_ROLLBACK_DETECTED' }, msg: e.message.slice('tag "t": '.length) });
    // A restart does not forget it, and the store moving on alone does not clear it.
    store.restore('t', 10_000n);
    expect((await failureOf(allocator().nextMany(1))).code).toBe('STORE_ROLLBACK_DETECTED');
    expect(a.snapshot().refusing).toBe('STORE_ROLLBACK_DETECTED');
    await store.fence('t', 20_000n);
    clock.advance(1000);
    expect(await a.nextMany(1)).toEqual([20_000]);
    expect(a.snapshot().refusing).toBeUndefined();
  });

  it('a rollback recorded earlier (another process, an earlier run) refuses without allocating, with the same message and log line in every mode', async () => {
    const { store, marks, clock, errors, allocator } = await world();
    await marks.put('t', { mark: 500n, trippedAtEpoch: 0 });
    const a = allocator();
    const e = await failureOf(a.nextMany(1));
    const reason = 'a rollback was detected earlier (high-water mark 500 kept in state dir /srv/sequoia); run `sequoia fence`';
    expect(e).toMatchObject({ code: 'STORE_ROLLBACK_DETECTED', message: `tag "t": ${reason}` });
    expect(store.allocateCalls).toBe(0);
    expect(errors()).toEqual([{ level: 'error', obj: { tag: 't', code: 'STORE_ROLLBACK_DETECTED' }, msg: reason }]);
    expect(a.snapshot()).toMatchObject({
      refusing: 'STORE_ROLLBACK_DETECTED',
      lastError: { code: 'STORE_ROLLBACK_DETECTED' },
      loadFailures: 1,
    });
    // A fence made elsewhere is accepted: the same allocator serves above it.
    await store.fence('t', 1000n);
    clock.advance(1000);
    expect(await a.nextMany(2)).toEqual([1000, 1001]);
  });

  it('marks that cannot be written: nothing is handed out, no further range is burnt until they can, then no repeat', async () => {
    const { store, marks, clock, allocator } = await world();
    const a = allocator();
    marks.failing = true;
    for (let i = 0; i < 3; i++) {
      clock.advance(10_000); // past any retry delay: each request may try the store again
      const e = await failureOf(a.nextMany(1));
      expect(e).toMatchObject({ code: 'STORE_UNAVAILABLE', message: 'cannot record the high-water mark' });
    }
    expect(store.allocateCalls).toBe(1);
    const burnt = (await store.getTag('t'))!.maxId;
    marks.failing = false;
    clock.advance(10_000);
    const [id] = await a.nextMany(1);
    expect(BigInt(id!)).toBeGreaterThanOrEqual(burnt); // a gap, never a repeat
  });

  it(`closed by a server shutting down: a request waiting on the store and every later one answer SHUTTING_DOWN (${mode})`, async () => {
    const store = new ControlledStore();
    await store.createTag({ tag: 't', step: 10 });
    const service = new IdService({ store, marks: new Marks(), refreshIntervalMs: 0, strictTags: mode === 'strict' ? ['t'] : [] });
    await service.start();
    const a = await service.allocator('t');
    store.hold = true;
    const waiting = failureOf(Promise.resolve(a.nextMany(1)));
    while (store.pending.length === 0) await tick();
    const closing = service.close();
    store.fail(); // the store closed under the write in flight
    expect((await waiting).code).toBe('SHUTTING_DOWN');
    await closing;
    expect((await failureOf(Promise.resolve(a.nextMany(1)))).code).toBe('SHUTTING_DOWN');
  });

  it('closed because the tag was deleted: TAG_NOT_FOUND', async () => {
    const { allocator } = await world();
    const a = allocator();
    a.close();
    expect((await failureOf(Promise.resolve(a.nextMany(1)))).code).toBe('TAG_NOT_FOUND');
  });
});
