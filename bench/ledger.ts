/**
 * `npm run bench -- ledger`: what the range ledger costs. The same store kind
 * twice, with and without its ledger row, interleaved in rounds so both sides
 * share the machine's load, measured two ways:
 * - segment loads: one caller calling `allocate` back to back (a load's
 *   latency as a server sees it): calls/s and p99;
 * - a strict tag: an IdService in strict mode on the store, `clients`
 *   callers asking `next` back to back (each batch of coalesced requests is
 *   one store write, with its ledger row): IDs/s and p99 of one `next`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresSegmentStore } from '../src/adapters/postgres/postgres-segment-store.js';
import { SqliteSegmentStore } from '../src/adapters/sqlite/sqlite-segment-store.js';
import { MemoryHighWaterMarkStore } from '../src/adapters/memory/memory-high-water-mark-store.js';
import type { SegmentStore } from '../src/ports/segment-store.js';
import { IdService } from '../src/service/id-service.js';
import { BENCH_POSTGRES_URL } from './stores.js';

export interface LedgerBenchRow {
  readonly store: string;
  /** `load`: allocate back to back; `strict`: strict-tag `next` from many callers. */
  readonly mode: 'load' | 'strict';
  readonly ledger: boolean;
  readonly callsPerSec: number;
  readonly p99Ms: number;
}

/** Concurrent callers on the strict tag (enough that batches coalesce). */
const STRICT_CLIENTS = 32;

async function open(kind: string, ledger: boolean): Promise<{ store: SegmentStore; drop: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const store = new SqliteSegmentStore({
      path: join(mkdtempSync(join(tmpdir(), 'sequoia-bench-ledger-')), 'ids.db'),
      recordLedger: ledger,
    });
    return { store, drop: async () => {} };
  }
  const table = `sq_bench_ledger_${process.pid}_${ledger ? 'on' : 'off'}`;
  const store = new PostgresSegmentStore({ connectionString: BENCH_POSTGRES_URL, table, recordLedger: ledger });
  return {
    store,
    drop: async () => {
      const c = new pg.Client({ connectionString: BENCH_POSTGRES_URL });
      await c.connect();
      await c.query(
        `DROP TABLE IF EXISTS ${table}; DROP TABLE IF EXISTS ${table}_ledger; DELETE FROM sequoia_schema WHERE component = '${table}'`,
      );
      await c.end();
    },
  };
}

/** Calls `call` back to back from `clients` callers for `ms`; how many calls completed. */
async function slice(call: () => Promise<unknown>, clients: number, ms: number, lat: number[]): Promise<number> {
  const end = performance.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await call();
        lat.push(performance.now() - t0);
        n++;
      }
    }),
  );
  return n;
}

export async function benchLedger(o: { rounds?: number; sliceMs?: number } = {}): Promise<LedgerBenchRow[]> {
  const rows: LedgerBenchRow[] = [];
  for (const kind of ['sqlite', 'postgres']) {
    type Side = { ledger: boolean; store: SegmentStore; drop: () => Promise<void>; service: IdService };
    type Measure = { lat: number[]; n: number; ms: number };
    let sides: Array<Side & { load: Measure; strict: Measure }>;
    try {
      sides = await Promise.all(
        [true, false].map(async (ledger) => {
          const opened = await open(kind, ledger);
          const service = new IdService({
            store: opened.store,
            marks: new MemoryHighWaterMarkStore(),
            refreshIntervalMs: 0,
            strictTags: ['strict'],
          });
          return { ledger, ...opened, service, load: { lat: [], n: 0, ms: 0 }, strict: { lat: [], n: 0, ms: 0 } };
        }),
      );
      for (const s of sides) {
        await s.store.init();
        await s.store.createTag({ tag: 'bench', step: 1000 });
        await s.store.createTag({ tag: 'strict', step: 1 });
        await s.service.start();
      }
    } catch (e) {
      console.error(`ledger bench: ${kind} skipped (${e instanceof Error ? e.message : String(e)})`);
      continue;
    }
    try {
      for (let r = 0; r < (o.rounds ?? 5); r++) {
        for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
          const runs: Array<[Measure, () => Promise<unknown>, number]> = [
            [s.load, () => s.store.allocate('bench'), 1],
            [s.strict, async () => s.service.next('strict'), STRICT_CLIENTS],
          ];
          for (const [m, call, clients] of runs) {
            const t0 = performance.now();
            m.n += await slice(call, clients, o.sliceMs ?? 1000, m.lat);
            m.ms += performance.now() - t0;
          }
        }
      }
      for (const mode of ['load', 'strict'] as const) {
        for (const s of sides) {
          const m = s[mode];
          const sorted = m.lat.sort((a, b) => a - b);
          rows.push({
            store: kind,
            mode,
            ledger: s.ledger,
            callsPerSec: (m.n / m.ms) * 1000,
            p99Ms: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
          });
        }
      }
    } finally {
      for (const s of sides) {
        // Closes the store too.
        await s.service.close().catch(() => {});
        await s.drop().catch(() => {});
      }
    }
  }
  return rows;
}
