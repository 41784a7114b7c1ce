import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import type { SequoiaError } from '../core/errors.js';
import type { Id } from '../core/id.js';
import { ControlledStore, ManualClock } from '../../test/helpers/fakes.js';
import { IdService } from './id-service.js';

async function make(store = new ControlledStore(), marks = new MemoryHighWaterMarkStore(), clock = new ManualClock()) {
  const service = new IdService({ store, marks, clock, refreshIntervalMs: 0, allocator: { loadTimeoutMs: 200, minRetryDelayMs: 5 } });
  await service.start();
  return { service, store, marks, clock };
}

const codeOf = (p: unknown): Promise<string> =>
  Promise.resolve(p).then(
    () => 'no error',
    (e: SequoiaError) => e.code,
  );

describe('IdService', () => {
  it('serves a tag created after start at once, and says TAG_NOT_FOUND for unknown ones', async () => {
    const { service, store } = await make();
    expect(await codeOf(service.next('late'))).toBe('TAG_NOT_FOUND');
    await store.createTag({ tag: 'late' }); // created elsewhere (another server, the CLI)
    // the negative cache is short and per tag; a fresh look-up after it sees the tag
    const { service: other } = await make(store);
    expect(await other.next('late')).toBe(1);
    expect(await codeOf(service.next('late'))).toBe('TAG_NOT_FOUND'); // within the negative cache
  });

  it('the negative cache expires, so a new tag is served within about a second', async () => {
    const { service, store, clock } = await make();
    expect(await codeOf(service.next('soon'))).toBe('TAG_NOT_FOUND');
    await store.createTag({ tag: 'soon' });
    clock.advance(1001);
    expect(await service.next('soon')).toBe(1);
  });

  it('creating a tag through the service clears its negative cache', async () => {
    const { service } = await make();
    expect(await codeOf(service.next('x'))).toBe('TAG_NOT_FOUND');
    await service.createTag({ tag: 'x', start: '42' });
    expect(await service.next('x')).toBe(42);
  });

  it('caps store look-ups of unknown tags per second', async () => {
    const store = new ControlledStore();
    const service = new IdService({
      store,
      marks: new MemoryHighWaterMarkStore(),
      clock: new ManualClock(),
      refreshIntervalMs: 0,
      unknownTagLookupsPerSecond: 3,
    });
    await service.start();
    let gets = 0;
    const orig = store.getTag.bind(store);
    store.getTag = (t) => {
      gets++;
      return orig(t);
    };
    const codes: string[] = [];
    for (let i = 0; i < 10; i++) codes.push(await codeOf(service.next(`nope${i}`)));
    expect(gets).toBe(3);
    // past the cap the tag may exist: RATE_LIMITED, never TAG_NOT_FOUND
    expect(codes).toEqual([...Array(3).fill('TAG_NOT_FOUND'), ...Array(7).fill('RATE_LIMITED')]);
  });

  it('serves tags on the store list without touching the unknown-tag cap', async () => {
    const store = new ControlledStore();
    await store.createTag({ tag: 'real' });
    const service = new IdService({
      store,
      marks: new MemoryHighWaterMarkStore(),
      clock: new ManualClock(),
      refreshIntervalMs: 0,
      unknownTagLookupsPerSecond: 2,
    });
    await service.start();
    expect(service.isKnown('real')).toBe(true);
    for (let i = 0; i < 5; i++) await codeOf(service.next(`nope${i}`));
    expect(await service.next('real')).toBe(1);
    // a tag made elsewhere after start becomes known when the list is re-read
    await store.createTag({ tag: 'later' });
    expect(service.isKnown('later')).toBe(false);
    await service.refresh();
    expect(await service.next('later')).toBe(1);
  });

  it('refresh drops tags deleted elsewhere', async () => {
    const { service, store } = await make();
    await service.createTag({ tag: 'gone' });
    expect(await service.next('gone')).toBe(1);
    await store.deleteTag('gone');
    await service.refresh();
    expect(service.snapshot().map((s) => s.tag)).toEqual([]);
    expect(await codeOf(service.next('gone'))).toBe('TAG_NOT_FOUND');
  });

  it('legal odd tag names work', async () => {
    const { service } = await make();
    for (const tag of ['__proto__', 'constructor', '..', 'a.b-c_D']) {
      await service.createTag({ tag });
      expect(await service.next(tag)).toBe(1);
    }
    expect(await codeOf(service.createTag({ tag: 'bad/tag' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(service.createTag({ tag: '__proto__' }))).toBe('TAG_EXISTS');
  });

  it('validates fields and refuses a fence below its own high-water mark', async () => {
    const { service } = await make();
    expect(await codeOf(service.createTag({ tag: 'a', step: 0 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(service.createTag({ tag: 'a', step: 1.5 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(service.createTag({ tag: 'a', start: '1e5' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(service.createTag({ tag: 'a', start: '9223372036854775808' }))).toBe('INVALID_ARGUMENT');
    await service.createTag({ tag: 'a', step: 10 });
    await service.next('a');
    expect(await codeOf(service.fence('a', '5'))).toBe('INVALID_ARGUMENT');
    expect((await service.fence('a', '1000')).maxId).toBe(1000n);
    expect(await codeOf(service.updateTag('a', {}))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(service.updateTag('missing', { step: 5 }))).toBe('TAG_NOT_FOUND');
  });

  it('property: random interleavings of requests, loads, failures and restarts never repeat an ID', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('next' as const), count: fc.integer({ min: 1, max: 40 }) }),
            fc.record({ kind: fc.constant('restart' as const) }),
            fc.record({ kind: fc.constant('down' as const), down: fc.boolean() }),
            fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 * 60_000 }) }),
          ),
          { minLength: 1, maxLength: 40 },
        ),
        fc.integer({ min: 1, max: 20 }),
        async (s, ops, step) => {
          const store = new ControlledStore();
          const marks = new MemoryHighWaterMarkStore(); // a restart keeps the state directory
          const clock = new ManualClock();
          await store.createTag({ tag: 't', step });
          // every store call runs in an order chosen by the scheduler
          const realAllocate = store.allocate.bind(store);
          // (both when the store commits and when its answer arrives)
          store.allocate = (tag, st) =>
            s
              .schedule(Promise.resolve(), 'commit')
              .then(() => realAllocate(tag, st))
              .then((a) => s.schedule(Promise.resolve(a), 'answer'));
          const opts = { store, marks, clock, refreshIntervalMs: 0, allocator: { loadTimeoutMs: 5_000, minRetryDelayMs: 1 } };
          let service = new IdService(opts);
          await service.start();
          const issued: Id[] = [];
          const calls: Promise<unknown>[] = [];
          for (const op of ops) {
            if (op.kind === 'next') {
              const r = op.count === 1 ? service.next('t') : service.nextMany('t', op.count);
              calls.push(
                Promise.resolve(r).then(
                  (v) => (Array.isArray(v) ? issued.push(...v) : issued.push(v)),
                  () => undefined,
                ),
              );
            } else if (op.kind === 'restart') {
              await service.close().catch(() => undefined);
              service = new IdService(opts);
              await service.start();
            } else if (op.kind === 'down') {
              store.down = op.down;
            } else {
              clock.advance(op.ms);
            }
          }
          await s.waitFor(Promise.all(calls));
          expect(new Set(issued.map(String)).size).toBe(issued.length);
        },
      ),
      { numRuns: 150 },
    );
  });
});
