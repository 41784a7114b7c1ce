/**
 * Retention of the range ledger: rows older than `ledgerRetentionDays` are
 * deleted in small batches on a timer, never on the allocation path (a batch
 * holds the store's write lock for a moment only; allocations between batches
 * go first). Failures are logged and tried again at the next round.
 */
import type { Logger } from '../ports/logger.js';
import type { SegmentStore } from '../ports/segment-store.js';

const DAY_MS = 86_400_000;
const BATCH = 500;
/** Batches per round: the rest waits for the next round. */
const MAX_BATCHES = 200;
const ROUND_MS = 3_600_000;

export function startLedgerPruner(
  store: SegmentStore,
  retentionDays: number,
  logger: Logger,
  o: { readonly firstDelayMs?: number; readonly roundMs?: number } = {},
): { stop(): void } {
  const prune = store.pruneLedger?.bind(store);
  if (!prune) return { stop: () => {} };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
  const round = async () => {
    const before = Date.now() - retentionDays * DAY_MS;
    let deleted = 0;
    try {
      for (let i = 0; i < MAX_BATCHES && !stopped; i++) {
        const n = await prune(before, BATCH);
        deleted += n;
        if (n < BATCH) break;
        await pause(50);
      }
      if (deleted > 0) logger.info({ deleted, retentionDays }, 'range ledger pruned');
    } catch (e) {
      logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'range ledger prune failed; trying again later');
    }
    if (!stopped) schedule(o.roundMs ?? ROUND_MS);
  };
  const schedule = (ms: number) => {
    timer = setTimeout(() => void round(), ms);
    timer.unref();
  };
  // Spread over a minute: several servers (or workers) started together do not prune at once.
  schedule(o.firstDelayMs ?? 10_000 + Math.floor(Math.random() * 60_000));
  return {
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
