/**
 * Two holders of one lease store under pauses (the 1 s lease test once
 * reported repeats on a loaded machine): one pause is injected at every
 * clock read in turn. A pause moves the wall and the monotonic clock
 * together; a wall step moves the wall clock only (the store's expiry and
 * the ticks, not the deadline). Whatever the pause, the IDs handed out never
 * repeat: a call may be refused (LEASE_LOST,
 * CLOCK_MOVED_BACKWARDS), never answered twice (policy reject: a clock behind
 * is refused at once rather than waited out in real time).
 */
import { describe, expect, it } from 'vitest';
import { LeaseWorkerIdProvider } from '../adapters/lease/lease-worker-id-provider.js';
import { MemoryWorkerLeaseStore } from '../adapters/memory/memory-worker-lease-store.js';
import { decompose, getLayout, joinWorker } from '../core/snowflake/layout.js';
import { SequoiaError } from '../core/errors.js';
import { SnowflakeService } from './snowflake-service.js';

const twitter = getLayout('twitter');
const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);

/**
 * pause: both clocks move; wall-step: the wall clock only; pause-skewed: a
 * pause, and b runs on a host whose clock is that much behind (so b reads
 * the ticks a used: only the lease row's last tick keeps them apart).
 */
type Kind = 'pause' | 'wall-step' | 'pause-skewed';

async function scenario(at: number, ms: number, kind: Kind) {
  const t = { wall: 1_764_000_000_000, mono: 1000, reads: 0 };
  const read = () => {
    t.reads++;
    if (t.reads % 150 === 0) {
      t.wall++;
      t.mono++;
    }
    if (t.reads === at) {
      t.wall += ms;
      if (kind !== 'wall-step') t.mono += ms;
    }
  };
  const clock = { now: () => (read(), t.wall) };
  const mono = () => (read(), t.mono);
  const store = new MemoryWorkerLeaseStore(() => (read(), t.wall));
  const skew = kind === 'pause-skewed' ? ms : 0;
  const make = (c: { now(): number }) =>
    new SnowflakeService({
      provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000, monotonic: mono }),
      clock: c,
      monotonic: mono,
      clockPolicy: 'reject',
    });
  const a = make(clock);
  const b = make({ now: () => clock.now() - skew });
  const ids: string[] = [];
  const refused: string[] = [];
  const take = async (s: SnowflakeService, n: number) => {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const got = await s.nextMany(undefined, n);
        ids.push(...got);
        return got;
      } catch (e) {
        if (!(e instanceof SequoiaError && (e.code === 'LEASE_LOST' || e.code === 'CLOCK_MOVED_BACKWARDS'))) throw e;
        refused.push(e.code);
      }
    }
    return [];
  };
  await a.start();
  const a1 = await take(a, 300);
  const bStarts = t.reads;
  await b.start();
  const b1 = await take(b, 600);
  const a2 = await take(a, 300);
  await Promise.all([a.close(), b.close()]);
  const shared = a1.length > 0 && b1.length > 0 && worker(a1[0] as string) === worker(b1[0] as string);
  return { distinct: new Set(ids).size, total: ids.length, refused: refused.length, shared, a2: a2.length, reads: t.reads, bStarts };
}

describe('SnowflakeService on a 1 s lease, paused at any clock read', () => {
  it('never repeats an ID; a holder whose id was taken over is refused or moves to another id', async () => {
    const quiet = await scenario(-1, 0, 'pause');
    expect(quiet).toMatchObject({ distinct: 1200, total: 1200, refused: 0, shared: false });
    // Every read of the starts (and around b's), a sample of the rest.
    const points = new Set([
      ...Array.from({ length: 40 }, (_, i) => i + 1),
      ...Array.from({ length: 40 }, (_, i) => quiet.bStarts - 10 + i),
      ...Array.from({ length: 30 }, (_, i) => 41 + Math.floor((i * (quiet.reads - 41)) / 30)),
    ]);
    const repeats: string[] = [];
    let takenOver = 0;
    let refusals = 0;
    for (const kind of ['pause', 'wall-step', 'pause-skewed'] as const) {
      for (const ms of [900, 1100, 5000]) {
        for (const at of points) {
          const r = await scenario(at, ms, kind);
          if (r.distinct !== r.total) repeats.push(`${kind} ${ms} ms at read ${at}: ${r.total - r.distinct} repeats`);
          if (r.shared) takenOver++;
          refusals += r.refused;
        }
      }
    }
    expect(repeats).toEqual([]);
    // The injected pauses did hand a's worker id to b while a had issued on it, and did refuse calls.
    expect(takenOver).toBeGreaterThan(0);
    expect(refusals).toBeGreaterThan(0);
  }, 120_000);
});

describe('the two-services test with a 1.5 s pause between the starts', () => {
  it("b takes a's expired id; a's next batch moves to a fresh id instead of failing, and nothing repeats", async () => {
    let pause = 0;
    const clock = { now: () => Date.now() + pause };
    const mono = () => performance.now() + pause;
    const store = new MemoryWorkerLeaseStore(() => clock.now());
    const make = () =>
      new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000, monotonic: mono }), clock, monotonic: mono });
    const a = make();
    const b = make();
    await a.start();
    const first = worker(await a.next());
    pause = 1500;
    await b.start();
    const ia = await a.nextMany(undefined, 5000);
    const ib = await b.nextMany(undefined, 5000);
    expect(worker(ib[0] as string)).toBe(first);
    expect(worker(ia[0] as string)).not.toBe(first);
    expect(new Set([...ia, ...ib]).size).toBe(10_000);
    await Promise.all([a.close(), b.close()]);
  });
});
