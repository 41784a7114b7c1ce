/**
 * `npm run bench -- ledger`: what the range ledger costs a segment load. The
 * same store kind twice, with and without its ledger row, one allocator
 * calling `allocate` back to back (a load's latency as a server sees it),
 * interleaved in rounds so both sides share the machine's load. Calls/s and
 * p99 per side.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresSegmentStore } from '../src/adapters/postgres/postgres-segment-store.js';
import { SqliteSegmentStore } from '../src/adapters/sqlite/sqlite-segment-store.js';
import type { SegmentStore } from '../src/ports/segment-store.js';
import { BENCH_POSTGRES_URL } from './stores.js';

export interface LedgerBenchRow {
  readonly store: string;
  readonly ledger: boolean;
  readonly callsPerSec: number;
  readonly p99Ms: number;
}

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

async function slice(store: SegmentStore, ms: number, lat: number[]): Promise<number> {
  const end = performance.now() + ms;
  let n = 0;
  while (performance.now() < end) {
    const t0 = performance.now();
    await store.allocate('bench');
    lat.push(performance.now() - t0);
    n++;
  }
  return n;
}

export async function benchLedger(o: { rounds?: number; sliceMs?: number } = {}): Promise<LedgerBenchRow[]> {
  const rows: LedgerBenchRow[] = [];
  for (const kind of ['sqlite', 'postgres']) {
    let sides: Array<{ ledger: boolean; store: SegmentStore; drop: () => Promise<void>; lat: number[]; n: number; ms: number }>;
    try {
      sides = await Promise.all(
        [true, false].map(async (ledger) => ({ ledger, ...(await open(kind, ledger)), lat: [] as number[], n: 0, ms: 0 })),
      );
      for (const s of sides) {
        await s.store.init();
        await s.store.createTag({ tag: 'bench', step: 1000 });
      }
    } catch (e) {
      console.error(`ledger bench: ${kind} skipped (${e instanceof Error ? e.message : String(e)})`);
      continue;
    }
    try {
      for (let r = 0; r < (o.rounds ?? 5); r++) {
        for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
          const t0 = performance.now();
          s.n += await slice(s.store, o.sliceMs ?? 1000, s.lat);
          s.ms += performance.now() - t0;
        }
      }
      for (const s of sides) {
        const sorted = s.lat.sort((a, b) => a - b);
        rows.push({
          store: kind,
          ledger: s.ledger,
          callsPerSec: (s.n / s.ms) * 1000,
          p99Ms: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
        });
      }
    } finally {
      for (const s of sides) {
        await s.store.close();
        await s.drop().catch(() => {});
      }
    }
  }
  return rows;
}
