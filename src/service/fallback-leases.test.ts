import { describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MemoryWorkerLeaseStore } from '../adapters/memory/memory-worker-lease-store.js';
import { FALLBACK_FLOOR } from '../core/fallback/fallback-space.js';
import { FallbackLeases, withFallbackCeiling } from './fallback-leases.js';

describe('fallback ceiling', () => {
  it('refuses a range of a fallback tag that would reach 2^62, and a start at or past it; other tags are untouched', async () => {
    const raw = new MemorySegmentStore();
    const store = withFallbackCeiling(raw, ['fb']);
    await store.init();
    await store.createTag({ tag: 'fb', step: 100, start: FALLBACK_FLOOR - 150n });
    await store.createTag({ tag: 'plain', step: 100, start: FALLBACK_FLOOR - 150n });
    expect((await store.allocate('fb')).maxId).toBe(FALLBACK_FLOOR - 50n);
    await expect(store.allocate('fb')).rejects.toMatchObject({
      code: 'ID_SPACE_EXHAUSTED',
      message: expect.stringMatching(/fallback space from 2\^62/),
    });
    await store.allocate('plain');
    expect((await store.allocate('plain')).maxId).toBe(FALLBACK_FLOOR + 50n); // not a fallback tag
    await expect(store.createTag({ tag: 'fb2', start: FALLBACK_FLOOR })).resolves.toBeDefined(); // not declared
    await expect(withFallbackCeiling(raw, ['fb3']).createTag({ tag: 'fb3', start: FALLBACK_FLOOR })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(store.kind).toBe(raw.kind);
  });
});

describe('fallback leases', () => {
  it("one worker id per holder, renewed in place, the next holder after the previous one's end; a tag without a fallback space is NOT_FOUND", async () => {
    let now = 1_800_000_000_000;
    const leases = new MemoryWorkerLeaseStore(() => now);
    const f = new FallbackLeases({ tags: ['fb'], ttlMs: 60_000, leases: () => leases });
    const a = await f.lease('fb', {}, 'addr:10.0.0.1');
    const b = await f.lease('fb', {}, 'addr:10.0.0.2');
    expect(a.workerId).not.toBe(b.workerId);
    expect(a.notAfterMs).toBe(a.expiresAtMs - 6000);
    expect(a.grantedAtMs).toBe(now);
    now += 20_000;
    const a2 = await f.lease('fb', { owner: a.owner, workerId: a.workerId, generation: a.generation, lastTick: now - 5 }, 'addr:10.0.0.1');
    expect([a2.workerId, a2.owner]).toEqual([a.workerId, a.owner]);
    expect(a2.expiresAtMs).toBe(now + 60_000);
    await expect(f.lease('plain', {}, 'x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // a's holder goes away: its id is handed out again only after its lease, and after the last tick it reported.
    await f.release('fb', { owner: b.owner, workerId: b.workerId, generation: b.generation, lastTick: now + 999_999 });
    const c = await f.lease('fb', {}, 'addr:10.0.0.3');
    expect(c.workerId).toBe(b.workerId);
    expect(c.notBeforeMs).toBe(now + 1_000_000);
  });
});
