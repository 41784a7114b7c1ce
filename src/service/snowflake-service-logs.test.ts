/**
 * One log line per lease change (acquired, renewal failure, lost, released)
 * and per clock event (backwards, waited, logical borrow, backup switch), and
 * the layout lifetime warning at start.
 */
import { describe, expect, it } from 'vitest';
import { LeaseWorkerIdProvider } from '../adapters/lease/lease-worker-id-provider.js';
import { MemoryWorkerLeaseStore } from '../adapters/memory/memory-worker-lease-store.js';
import { StaticWorkerIdProvider } from '../adapters/static/static-worker-id-provider.js';
import { defineLayout, getLayout } from '../core/snowflake/layout.js';
import type { Logger } from '../ports/logger.js';
import { ManualClock } from '../../test/helpers/fakes.js';
import { SnowflakeService } from './snowflake-service.js';

type Line = { level: string; msg: string; obj: Record<string, unknown> };

function recorder(): Logger & { lines: Line[]; msgs: () => string[] } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: object, msg?: string) =>
    void lines.push({ level, msg: msg ?? '', obj: obj as Record<string, unknown> });
  return { lines, msgs: () => lines.map((l) => l.msg), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const count = (log: ReturnType<typeof recorder>, re: RegExp) => log.msgs().filter((m) => re.test(m)).length;

describe('SnowflakeService logs', () => {
  it('lease changes: acquired, renewal failed, lost, released', async () => {
    const store = new MemoryWorkerLeaseStore();
    const log = recorder();
    let mono = 0;
    const provider = new LeaseWorkerIdProvider(store, { ttlMs: 1000, monotonic: () => mono });
    const a = new SnowflakeService({ provider, logger: log, monotonic: () => mono });
    await a.next();
    expect(count(log, /worker id acquired/)).toBe(1);
    // The store fails once: one warning, the current deadline is kept.
    const renew = store.renew.bind(store);
    store.renew = () => Promise.reject(new Error('store down'));
    await expect((await a.worker('twitter')).renew()).rejects.toThrow('store down');
    expect(count(log, /renewal failed/)).toBe(1);
    store.renew = renew;
    // Taken over while paused: lost, logged once.
    mono = 5000;
    const row = store.peek(getLayout('twitter').spaceKey, 0) as { expiresAtMs: number };
    row.expiresAtMs = 0;
    const b = new SnowflakeService({ provider: new LeaseWorkerIdProvider(store, { ttlMs: 1000 }) });
    await b.next();
    await a.nextMany(undefined, 10);
    expect(count(log, /lease lost/)).toBe(1);
    expect(log.lines.find((l) => /lease lost/.test(l.msg))?.level).toBe('error');
    await a.close();
    expect(count(log, /worker id released/)).toBe(1); // the re-leased id; the lost one is not released
    await b.close();
  });

  it('clock events: backwards + waited (wait), borrow (logical), backup switch (backup-worker), one line each', async () => {
    for (const [policy, re] of [
      ['wait', /waited it out/],
      ['logical', /borrowed future ticks/],
      ['backup-worker', /switched to a backup worker id/],
    ] as const) {
      const clock = new ManualClock();
      const log = recorder();
      const s = new SnowflakeService({
        provider: new LeaseWorkerIdProvider(new MemoryWorkerLeaseStore(), { ttlMs: 60_000 }),
        clock,
        clockPolicy: policy,
        logger: log,
        maxWaitMs: 50,
      });
      await s.nextMany(undefined, 10);
      clock.advance(-20);
      if (policy === 'wait') {
        const p = s.next();
        setTimeout(() => clock.advance(25), 5);
        await p;
      } else await s.nextMany(undefined, policy === 'logical' ? 5000 : 10);
      expect(count(log, /clock moved backwards/)).toBe(1);
      expect(count(log, re)).toBe(1);
      await s.close();
    }
  });

  it('warns at start when the layout has less than five years left', async () => {
    const log = recorder();
    const now = Date.now();
    // 36 time bits of 1 ms ≈ 795 days: a layout whose epoch was 700 days ago has under five years left.
    const short = defineLayout(
      {
        name: 'short',
        version: 1,
        epochMs: now - 700 * 86_400_000,
        unitMs: 1,
        timeBits: 36,
        fields: [
          { name: 'worker', bits: 10, role: 'node' },
          { name: 'sequence', bits: 17, role: 'sequence' },
        ],
        sequenceStart: { kind: 'zero' },
      },
      { minLifetimeYears: 0 },
    );
    const s = new SnowflakeService({
      provider: new StaticWorkerIdProvider(1),
      layouts: new Map([['short', short]]),
      defaultLayout: 'short',
      logger: log,
    });
    await s.start();
    expect(count(log, /runs out of time bits soon/)).toBe(1);
    expect(s.report()[0]?.layoutRemainingSeconds).toBeLessThan(5 * 365 * 86_400);
    await s.close();
    const log2 = recorder();
    const t = new SnowflakeService({ provider: new StaticWorkerIdProvider(1), logger: log2 });
    await t.start();
    expect(count(log2, /runs out of time bits soon/)).toBe(0);
    await t.close();
  });
});
