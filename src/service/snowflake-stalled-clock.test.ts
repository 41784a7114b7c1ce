/**
 * A wall clock that stops (libfaketime froze it, a VM's clock stalled) while a
 * request has used up its tick's sequence: the service must keep its event
 * loop turning and give up after the clock policy's wait, not spin forever
 * waiting for a tick that never comes (the torture run that printed PASS and
 * then spun on one core).
 */
import { describe, expect, it } from 'vitest';
import { StaticWorkerIdProvider } from '../adapters/static/static-worker-id-provider.js';
import type { Clock } from '../core/clock.js';
import { SequoiaError } from '../core/errors.js';
import { getLayout } from '../core/snowflake/layout.js';
import { SnowflakeService } from './snowflake-service.js';

/** Reads one instant until it has been read `thawAfter` times (so a service that spins still ends, and the test fails instead of hanging). */
function frozenClock(at: number, thawAfter: number): Clock & { reads: number } {
  const c = {
    reads: 0,
    now(): number {
      c.reads++;
      return c.reads < thawAfter ? at : at + c.reads - thawAfter + 1;
    },
  };
  return c;
}

describe('SnowflakeService with a stopped clock', () => {
  it('a sequence used up on a clock that does not move is waited out with timers and refused after the wait policy, never a busy loop', async () => {
    const perTick = 2 ** getLayout('twitter').sequenceBits;
    const clock = frozenClock(Date.parse('2026-12-01T00:00:00Z'), 20_000_000);
    const s = new SnowflakeService({ provider: new StaticWorkerIdProvider(3), clock, maxWaitMs: 100 });
    await s.start();
    let turns = 0;
    const loop = setInterval(() => turns++, 5);
    const started = performance.now();
    let error: unknown;
    try {
      await s.nextMany(undefined, perTick + 10);
    } catch (e) {
      error = e;
    } finally {
      clearInterval(loop);
      await s.close();
    }
    // Without the fix the call spins until the clock thaws (millions of reads) and then succeeds.
    expect(clock.reads).toBeLessThan(20_000_000);
    expect(error).toBeInstanceOf(SequoiaError);
    expect((error as SequoiaError).code).toBe('CLOCK_MOVED_BACKWARDS');
    expect((error as SequoiaError).message).toMatch(/clock has not moved/);
    expect(turns).toBeGreaterThan(2);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a clock that moves again while the service waits lets the request finish', async () => {
    const perTick = 2 ** getLayout('twitter').sequenceBits;
    const at = Date.parse('2026-12-01T00:00:00Z');
    let frozen = true;
    let reads = 0;
    // Thawed by a timer, or (when the service never lets a timer run) after many reads.
    const clock: Clock = { now: () => (frozen && ++reads < 20_000_000 ? at : at + 1) };
    const s = new SnowflakeService({ provider: new StaticWorkerIdProvider(3), clock, maxWaitMs: 1000 });
    await s.start();
    setTimeout(() => (frozen = false), 30);
    const ids = await s.nextMany(undefined, perTick + 10);
    await s.close();
    expect(new Set(ids).size).toBe(perTick + 10);
    expect(reads).toBeLessThan(20_000_000);
  });
});
