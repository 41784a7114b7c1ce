import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../test/helpers/fakes.js';
import { PooledSystemRandom } from '../random.js';
import { SequoiaError } from '../errors.js';
import { type ClockEvent, type ClockPolicy, SnowflakeGenerator, type Wait, splitE8 } from './generator.js';
import { PRESETS, compose, decompose, getLayout, joinWorker } from './layout.js';

const random = new PooledSystemRandom();
const twitter = getLayout('twitter');

/** Takes one ID the way the service does: waits (by advancing the manual clock) and extends ceilings. */
function takeOne(g: SnowflakeGenerator, clock: ManualClock, shard = 0): string {
  for (let i = 0; i < 1000; i++) {
    const id = g.take(shard);
    if (typeof id === 'string') return id;
    if (id.reason === 'ceiling') g.extend(id.wantTick + 1000, Number.POSITIVE_INFINITY);
    else clock.advance(id.waitMs);
  }
  throw new Error('no progress');
}

function triple(id: string, layout = twitter): string {
  const d = decompose(layout, BigInt(id));
  return `${d.tick}/${joinWorker(layout, d.values)}/${d.values.sequence}`;
}

describe('splitE8', () => {
  it('is exact for every tick and width', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 62 }), fc.double({ min: 0, max: 1, noNaN: true }), (lowBits, frac) => {
        const maxTick = 2 ** (63 - lowBits) - 1;
        const tick = Math.min(Math.floor(frac * maxTick), Number.MAX_SAFE_INTEGER);
        const [q, r] = splitE8(tick, lowBits);
        expect(BigInt(q) * 100_000_000n + BigInt(r)).toBe(BigInt(tick) << BigInt(lowBits));
      }),
    );
  });
});

describe('decimal output equals compose()', () => {
  for (const layout of PRESETS.values()) {
    it(layout.name, () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: Math.min(layout.maxTick, Math.floor((Date.UTC(2200, 0) - layout.epochMs) / layout.unitMs)) }),
          fc.integer({ min: 0, max: 2 ** layout.workerBits - 1 }),
          fc.integer({ min: 0, max: 2 ** layout.shardBits - 1 }),
          (tick, worker, shard) => {
            const clock = new ManualClock(layout.epochMs + tick * layout.unitMs);
            const g = new SnowflakeGenerator({ layout, clock, worker: { workerId: worker }, random });
            const id = g.take(shard) as string;
            const d = decompose(layout, BigInt(id));
            expect(d.tick).toBe(tick);
            expect(joinWorker(layout, d.values)).toBe(worker);
            if (layout.shardBits) expect(d.values.shard).toBe(shard);
            expect(BigInt(id)).toBe(compose(layout, tick, d.values));
            expect(id).toBe(BigInt(id).toString());
          },
        ),
        { numRuns: 200 },
      );
    });
  }
});

describe('sequence', () => {
  it('runs out after 4096 in a ms and asks to retry next tick', () => {
    const clock = new ManualClock();
    const g = new SnowflakeGenerator({ layout: twitter, clock, worker: { workerId: 5 } });
    const ids = new Set<string>();
    for (let i = 0; i < 4096; i++) ids.add(g.take() as string);
    expect(ids.size).toBe(4096);
    expect(g.take()).toEqual({ reason: 'sequence', waitMs: 1 });
    expect(g.stats().sequenceExhaustedTotal).toBe(1);
    clock.advance(1);
    expect(decompose(twitter, BigInt(g.take() as string)).values.sequence).toBe(0);
  });

  it('on 10-ms ticks asks to retry at the start of the next tick', () => {
    const l = getLayout('sonyflake');
    const clock = new ManualClock(l.epochMs + 1000 * l.unitMs + 3); // 3 ms into tick 1000
    const g = new SnowflakeGenerator({ layout: l, clock });
    for (let i = 0; i < 256; i++) expect(typeof g.take()).toBe('string');
    expect(g.take()).toEqual({ reason: 'sequence', waitMs: 7 });
    clock.advance(6);
    expect(g.take()).toEqual({ reason: 'sequence', waitMs: 1 });
    expect(g.stats().sequenceExhaustedTotal).toBe(1); // counted once per tick
  });

  it('customuuid starts each tick at a random 0-9', () => {
    const l = getLayout('customuuid');
    const clock = new ManualClock();
    const g = new SnowflakeGenerator({ layout: l, clock, random });
    const starts = new Set<number>();
    for (let i = 0; i < 300; i++) {
      clock.advance(1);
      starts.add(decompose(l, BigInt(g.take() as string)).values.sequence as number);
    }
    expect([...starts].every((s) => s >= 0 && s <= 9)).toBe(true);
    expect(starts.size).toBeGreaterThan(5);
  });

  it('instagram keeps a sequence per shard and tick', () => {
    const l = getLayout('instagram');
    const clock = new ManualClock();
    const g = new SnowflakeGenerator({ layout: l, clock });
    const a = decompose(l, BigInt(g.take(1341) as string));
    const b = decompose(l, BigInt(g.take(7) as string));
    const c = decompose(l, BigInt(g.take(1341) as string));
    expect([a.values.shard, a.values.sequence, b.values.shard, b.values.sequence, c.values.sequence]).toEqual([1341, 0, 7, 0, 1]);
    expect(() => g.take(8192)).toThrow(/shard/);
  });

  it('starts strictly after afterTick', () => {
    const clock = new ManualClock();
    const t = clock.t - twitter.epochMs;
    const g = new SnowflakeGenerator({ layout: twitter, clock, worker: { workerId: 1, afterTick: t } });
    expect(g.take()).toEqual({ reason: 'sequence', waitMs: 1 });
    clock.advance(1);
    expect(decompose(twitter, BigInt(g.take() as string)).tick).toBe(t + 1);
  });
});

describe('lifetime', () => {
  it('refuses with ID_SPACE_EXHAUSTED after the last tick, never wraps', () => {
    const l = getLayout('uid-generator');
    const clock = new ManualClock(l.endsAtMs - 1000);
    const g = new SnowflakeGenerator({ layout: l, clock });
    const last = g.take() as string;
    expect(decompose(l, BigInt(last)).tick).toBe(l.maxTick);
    clock.advance(1000);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
    const ig = getLayout('instagram');
    const g2 = new SnowflakeGenerator({ layout: ig, clock: new ManualClock(ig.endsAtMs + 5) });
    expect(() => g2.take()).toThrow(expect.objectContaining({ code: 'ID_SPACE_EXHAUSTED' }));
  });
});

describe('lease deadline', () => {
  it('refuses with LEASE_LOST at the next take even if the wall clock stands still', () => {
    let mono = 0;
    const g = new SnowflakeGenerator({ layout: twitter, clock: new ManualClock(), validUntil: 100, monotonic: () => mono });
    g.take();
    mono = 100;
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }));
  });

  it('refuses with LEASE_LOST once the deadline passed, and after revoke()', () => {
    let mono = 0;
    const clock = new ManualClock();
    const g = new SnowflakeGenerator({ layout: twitter, clock, validUntil: 100, monotonic: () => mono });
    expect(typeof g.take()).toBe('string');
    // A pause moves both clocks; the deadline is read on the monotonic clock at every take.
    mono = 100;
    clock.advance(100);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }));
    g.extend(0, 1000);
    expect(typeof g.take()).toBe('string');
    g.revoke();
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }));
  });

  it('a renewal that lands after revoke() does not bring the generator back', () => {
    // The service revokes at close() and on a lost lease while a renewal may be in flight;
    // revoke is for good, whatever extend() is told afterwards.
    const g = new SnowflakeGenerator({ layout: twitter, clock: new ManualClock(), validUntil: 100, monotonic: () => 0 });
    expect(typeof g.take()).toBe('string');
    g.revoke();
    g.extend(Number.MAX_SAFE_INTEGER, Number.POSITIVE_INFINITY);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }));
  });
});

const JUMPS = [1, 5, 1000, 3_600_000];
const POLICIES: ClockPolicy[] = ['reject', 'wait', 'logical', 'backup-worker'];

describe.each(POLICIES)('clock policy %s', (policy) => {
  it.each(JUMPS)('clock back %i ms: no triple repeats, the right error or wait', (jump) => {
    const clock = new ManualClock();
    const g = new SnowflakeGenerator({
      layout: twitter,
      clock,
      clockPolicy: policy,
      maxWaitMs: 1000,
      worker: { workerId: 3 },
      backups: policy === 'backup-worker' ? [{ workerId: 900 }] : [],
    });
    const seen = new Set<string>();
    const add = (id: string) => {
      const k = triple(id);
      expect(seen.has(k)).toBe(false);
      seen.add(k);
    };
    // 6,000 IDs over ~2 ms: the sequence runs out once.
    for (let i = 0; i < 6000; i++) {
      add(takeOne(g, clock));
      if (i % 3000 === 2999) clock.advance(1);
    }
    clock.t = twitter.epochMs + g.lastIssuedTick - jump; // `jump` ms behind the last tick issued
    let first: string | Wait | undefined;
    let err: unknown;
    try {
      first = g.take();
    } catch (e) {
      err = e;
    }
    if (policy === 'reject' || (policy === 'wait' && jump > 1000)) {
      expect(err).toBeInstanceOf(SequoiaError);
      expect((err as SequoiaError).code).toBe('CLOCK_MOVED_BACKWARDS');
      expect((err as SequoiaError).retryAfterMs).toBeGreaterThanOrEqual(jump);
      // Nothing is issued until the clock is back.
      clock.advance(jump - 1);
      if (policy === 'reject') expect(() => g.take()).toThrow(expect.objectContaining({ code: 'CLOCK_MOVED_BACKWARDS' }));
      else expect(g.take()).toEqual({ reason: 'clock', waitMs: 1 }); // now within the bound: wait
      clock.advance(1);
    } else if (policy === 'wait') {
      expect(err).toBeUndefined();
      expect(first).toEqual({ reason: 'clock', waitMs: jump });
    } else {
      expect(err).toBeUndefined();
      expect(typeof first).toBe('string');
      add(first as string);
      if (policy === 'backup-worker') expect(g.workerId).toBe(900);
      else expect(decompose(twitter, BigInt(first as string)).tick).toBeGreaterThan(clock.t - twitter.epochMs);
    }
    expect(g.stats().clockBackwardsTotal).toBe(1);
    // 10,000 more with the clock crawling: never a repeat.
    for (let i = 0; i < 10_000; i++) {
      add(takeOne(g, clock));
      if (i % 1000 === 999) clock.advance(1);
    }
    expect(seen.size).toBe(policy === 'wait' || policy === 'reject' ? 16_000 : 16_001);
  });
});

/** Worker id 1, with worker id 2 to switch to when the clock goes back. */
function backupWorker(clock: ManualClock, onClockEvent?: (e: ClockEvent) => void): SnowflakeGenerator {
  return new SnowflakeGenerator({
    layout: twitter,
    clock,
    clockPolicy: 'backup-worker',
    worker: { workerId: 1 },
    backups: [{ workerId: 2 }],
    ...(onClockEvent ? { onClockEvent } : {}),
  });
}

describe('backup-worker', () => {
  it('refuses once every worker id is behind', () => {
    const clock = new ManualClock();
    const g = backupWorker(clock);
    g.take();
    clock.advance(-10);
    g.take();
    expect(g.workerId).toBe(2);
    clock.advance(-10);
    expect(() => g.take()).toThrow(expect.objectContaining({ code: 'CLOCK_MOVED_BACKWARDS' }));
  });
});

describe('clock events', () => {
  it('backwards once per episode, then the first borrowed tick (logical)', () => {
    const events: ClockEvent[] = [];
    const clock = new ManualClock();
    const t0 = clock.t - twitter.epochMs;
    const g = new SnowflakeGenerator({ layout: twitter, clock, clockPolicy: 'logical', onClockEvent: (e) => events.push(e) });
    g.take();
    clock.advance(-3);
    for (let i = 0; i < 5000; i++) expect(typeof g.take()).toBe('string'); // the rest of t0, all of t0 + 1, then t0 + 2
    expect(events).toEqual([
      { kind: 'backwards', policy: 'logical', gapMs: 3, tick: t0 },
      { kind: 'borrow', policy: 'logical', gapMs: 4, tick: t0 + 1 },
    ]);
  });

  it('backwards, then the switch with both worker ids (backup-worker)', () => {
    const events: ClockEvent[] = [];
    const clock = new ManualClock();
    const t0 = clock.t - twitter.epochMs;
    const onClockEvent = (e: ClockEvent) => events.push(e);
    const g = backupWorker(clock, onClockEvent);
    g.take();
    clock.advance(-10);
    g.take();
    g.take();
    expect(events).toEqual([
      { kind: 'backwards', policy: 'backup-worker', gapMs: 10, tick: t0 },
      { kind: 'backup-switch', policy: 'backup-worker', gapMs: 10, tick: t0 - 10, fromWorker: 1, toWorker: 2 },
    ]);
  });
});

describe('logical', () => {
  it('borrows future ticks only up to the persisted ceiling', () => {
    const clock = new ManualClock();
    const t0 = clock.t - twitter.epochMs;
    const g = new SnowflakeGenerator({ layout: twitter, clock, clockPolicy: 'logical', ceilingTick: t0 + 1 });
    g.take();
    clock.advance(-1000);
    let n = 0;
    let r = g.take();
    for (; typeof r === 'string'; r = g.take()) n++;
    expect(n).toBe(4095 + 4096); // the rest of t0, then all of t0+1
    expect(r).toEqual({ reason: 'ceiling', waitMs: 0, wantTick: t0 + 2 });
    g.extend(t0 + 2, Number.POSITIVE_INFINITY);
    expect(decompose(twitter, BigInt(g.take() as string)).tick).toBe(t0 + 2);
  });
});

describe('ordering within a worker', () => {
  for (const policy of ['reject', 'wait', 'logical'] as const) {
    it(`IDs rise under any clock trace (${policy})`, () => {
      fc.assert(
        fc.property(fc.array(fc.tuple(fc.integer({ min: -50, max: 50 }), fc.integer({ min: 1, max: 600 })), { maxLength: 20 }), (trace) => {
          const clock = new ManualClock();
          const g = new SnowflakeGenerator({ layout: twitter, clock, clockPolicy: policy, maxWaitMs: 20, worker: { workerId: 9 } });
          let prev = -1n;
          for (const [delta, n] of trace) {
            clock.advance(delta);
            for (let i = 0; i < n; i++) {
              let id: string | Wait;
              try {
                id = g.take();
              } catch (e) {
                expect((e as SequoiaError).code).toBe('CLOCK_MOVED_BACKWARDS');
                break;
              }
              if (typeof id !== 'string') {
                if (id.reason === 'ceiling') throw new Error('no ceiling set');
                clock.advance(id.waitMs);
                continue;
              }
              const v = BigInt(id);
              expect(v > prev).toBe(true);
              prev = v;
            }
          }
        }),
        { numRuns: 60 },
      );
    });
  }
});

describe("leaf's random sequence start (Leaf: RANDOM.nextInt(100) at each new ms)", () => {
  it('one ID per ms spreads over shards under id % 2; twitter stays on one', () => {
    const residues = (name: string) => {
      const layout = getLayout(name);
      const clock = new ManualClock(Date.UTC(2026, 0, 1));
      const g = new SnowflakeGenerator({ layout, clock, worker: { workerId: 1 }, random });
      const seen = new Set<number>();
      const starts = new Set<number>();
      for (let i = 0; i < 200; i++) {
        clock.advance(1);
        const id = BigInt(g.take() as string);
        seen.add(Number(id % 2n));
        starts.add(decompose(layout, id).values.sequence as number);
      }
      return { seen, starts };
    };
    const leaf = residues('leaf');
    expect(leaf.seen).toEqual(new Set([0, 1]));
    expect(Math.max(...leaf.starts)).toBeLessThanOrEqual(99);
    expect(leaf.starts.size).toBeGreaterThan(20);
    expect(residues('twitter').seen).toEqual(new Set([0]));
    expect(residues('twitter').starts).toEqual(new Set([0]));
  });

  it('within a ms, leaf IDs still count up from the random start', () => {
    const layout = getLayout('leaf');
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const g = new SnowflakeGenerator({ layout, clock, worker: { workerId: 1 }, random });
    const seqs = Array.from({ length: 5 }, () => decompose(layout, BigInt(g.take() as string)).values.sequence as number);
    expect(seqs.slice(1)).toEqual(seqs.slice(0, 4).map((s) => s + 1));
  });
});

describe('library use without a Random', () => {
  it('a layout that starts its sequence at random draws from the system source by default, and from an injected one when given', () => {
    const clock = new ManualClock();
    const leaf = getLayout('leaf');
    const g = new SnowflakeGenerator({ layout: leaf, worker: { workerId: 1 }, clock });
    const starts = new Set<number>();
    for (let i = 0; i < 200; i++) {
      clock.advance(1);
      const id = g.take();
      expect(typeof id).toBe('string');
      starts.add(decompose(leaf, BigInt(id as string)).values.sequence as number);
    }
    expect(starts.size).toBeGreaterThan(20);
    let fills = 0;
    const scripted = { fill: (b: Uint8Array) => (fills++, b.fill(0)) };
    const h = new SnowflakeGenerator({ layout: leaf, worker: { workerId: 1 }, clock, random: scripted });
    clock.advance(1);
    expect(decompose(leaf, BigInt(h.take() as string)).values.sequence).toBe(0);
    expect(fills).toBe(1);
  });
});
