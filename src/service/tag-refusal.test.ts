import { describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { silentLogger } from '../core/silent-logger.js';
import { ManualClock } from '../../test/helpers/fakes.js';
import { TagRefusal } from './tag-refusal.js';

async function setup() {
  const store = new MemorySegmentStore();
  await store.createTag({ tag: 't' });
  const clock = new ManualClock();
  let lifted = 0;
  const refusal = new TagRefusal('t', { store, marks: new MemoryHighWaterMarkStore(), clock, logger: silentLogger }, () => lifted++);
  return { store, clock, refusal, lifted: () => lifted };
}

describe('TagRefusal', () => {
  it('lifts a rollback refusal once the store is fenced past the trip, reading the store at most once a second', async () => {
    const { store, clock, refusal, lifted } = await setup();
    refusal.refuse('restored from a backup', 0);
    expect(refusal.current?.code).toBe('STORE_ROLLBACK_DETECTED');
    expect(await refusal.recheckFence()).toBe(false);
    await store.fence('t', 0n);
    expect(await refusal.recheckFence()).toBe(false); // read less than a second ago
    clock.advance(1000);
    expect(await refusal.recheckFence()).toBe(true);
    expect(refusal.current).toBeUndefined();
    expect(lifted()).toBe(1);
  });

  it('times the fence re-check on the monotonic clock: a wall clock stepped back a day does not hold the refusal', async () => {
    const { store, clock, refusal } = await setup();
    clock.step(86_400_000); // a day ahead when the rollback is seen
    refusal.refuse('restored from a backup', 0);
    expect(await refusal.recheckFence()).toBe(false);
    clock.step(-86_400_000); // NTP steps the clock back
    await store.fence('t', 0n);
    clock.advance(1000);
    expect(await refusal.recheckFence()).toBe(true);
  });

  it('stays refused once closed: a rollback refusal is kept, and neither a fence nor lift() reopens it', async () => {
    const { store, clock, refusal, lifted } = await setup();
    refusal.refuse('restored from a backup', 0);
    refusal.close();
    expect(refusal.current?.code).toBe('STORE_ROLLBACK_DETECTED');
    await store.fence('t', 0n);
    clock.advance(1000);
    expect(await refusal.recheckFence()).toBe(false);
    refusal.lift();
    expect(refusal.closed).toBe(true);
    expect(refusal.current?.code).toBe('STORE_ROLLBACK_DETECTED');
    expect(lifted()).toBe(0);
  });

  it('refuses a closed tag as not found when nothing else refused it', async () => {
    const { refusal } = await setup();
    expect(refusal.current).toBeUndefined();
    refusal.close();
    expect(refusal.current?.code).toBe('TAG_NOT_FOUND');
  });

  it('holds a trip recorded in a mark until the store is fenced past its epoch', async () => {
    const { store, refusal } = await setup();
    expect(await refusal.tripStands(0)).toBe(true);
    await store.fence('t', 0n);
    expect(await refusal.tripStands(0)).toBe(false);
    expect(await refusal.tripStands(1)).toBe(true);
  });
});
