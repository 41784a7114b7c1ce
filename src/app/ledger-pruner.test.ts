import { describe, expect, it } from 'vitest';
import type { Logger } from '../ports/logger.js';
import type { SegmentStore } from '../ports/segment-store.js';
import { startLedgerPruner } from './ledger-pruner.js';

const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} } as unknown as Logger;

describe('ledger pruner', () => {
  it('deletes in batches of 500 until a short batch, with the retention cutoff, off a timer', async () => {
    const calls: Array<{ before: number; limit: number }> = [];
    const answers = [500, 500, 3];
    const store = {
      pruneLedger: async (before: number, limit: number) => (calls.push({ before, limit }), answers.shift() ?? 0),
    } as unknown as SegmentStore;
    const t0 = Date.now();
    const p = startLedgerPruner(store, 90, quiet, { firstDelayMs: 0, roundMs: 3_600_000 });
    await new Promise((r) => setTimeout(r, 400));
    p.stop();
    expect(calls.map((c) => c.limit)).toEqual([500, 500, 500]);
    const cutoff = t0 - 90 * 86_400_000;
    expect(Math.abs((calls[0]?.before ?? 0) - cutoff)).toBeLessThan(1000);
  });

  it('a failing store is logged and tried again next round; a store without a ledger is left alone', async () => {
    let n = 0;
    const warned: unknown[] = [];
    const store = {
      pruneLedger: async () => {
        n++;
        throw new Error('down');
      },
    } as unknown as SegmentStore;
    const p = startLedgerPruner(store, 1, { ...quiet, warn: (o: unknown) => warned.push(o) } as unknown as Logger, {
      firstDelayMs: 0,
      roundMs: 50,
    });
    await new Promise((r) => setTimeout(r, 400));
    p.stop();
    expect(n).toBeGreaterThanOrEqual(2);
    expect(warned.length).toBe(n);
    startLedgerPruner({} as SegmentStore, 90, quiet).stop();
  });
});
