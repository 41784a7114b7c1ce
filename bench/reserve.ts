/**
 * The client's reserve (docs/client.md#reserve), measured against a real
 * server on SQLite: at a steady rate, how long the client keeps issuing after
 * its only server is SIGKILLed (buffer, then reserve, until RESERVE_EXHAUSTED),
 * and what the reserve costs the store: the ranges allocated (ledger rows)
 * and the IDs taken from the store during the same steady run, with the
 * reserve on and off.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createClient } from '../src/client/index.js';
import { startChild, stopChild } from './util.js';

export interface ReserveBenchRow {
  readonly rate: number;
  readonly seconds: number;
  readonly reserve: boolean;
  /** IDs the app drew during the steady phase. */
  readonly drawn: number;
  /** Ranges the store allocated for the tag during the steady phase (its ledger rows), the first load included. */
  readonly allocations: number;
  /** IDs the store handed out for the tag during the steady phase. */
  readonly storeIds: number;
  /** The client's reserve when the server died. */
  readonly reserveIds: number;
  /** After the kill: ms until the first refusal (RESERVE_EXHAUSTED; STORE_UNAVAILABLE without a reserve); NaN: none within 5 × seconds. */
  readonly coverMs: number;
  readonly servedFromReserve: number;
}

const root = fileURLToPath(new URL('../..', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Draws `rate` IDs per second in 10 ms slices until `stop` answers true or a call fails; answers the IDs drawn and the error. */
async function draw(next: () => Promise<unknown>, rate: number, stop: () => boolean): Promise<{ drawn: number; error?: unknown }> {
  const t0 = performance.now();
  let drawn = 0;
  while (!stop()) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    try {
      while (drawn < due) {
        await next();
        drawn++;
      }
    } catch (error) {
      return { drawn, error };
    }
    await sleep(10);
  }
  return { drawn };
}

async function one(rate: number, seconds: number, reserve: boolean, steadyMs: number): Promise<ReserveBenchRow> {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-bench-reserve-'));
  const path = join(dir, 'store.db');
  const cli = join(root, 'dist', 'cli', 'main.js');
  execFileSync(process.execPath, [cli, 'tag', 'create', 'r', '--step', '1000', '--store', `sqlite:${path}`, '--state-dir', dir]);
  const server = await startChild([cli, 'serve', '--port', '0', '--workers', '1', '--store', `sqlite:${path}`, '--state-dir', dir]);
  const db = new Database(path, { readonly: true });
  const ledger = (): { rows: number; ids: number } => {
    const r = db
      .prepare("SELECT COUNT(*) AS n, COALESCE(SUM(step), 0) AS ids FROM sequoia_ledger WHERE tag = 'r' AND kind = 'allocate'")
      .get() as {
      n: number;
      ids: number;
    };
    return { rows: r.n, ids: r.ids };
  };
  const client = createClient({
    urls: [server.url],
    reserve: reserve ? { seconds, min: 100, max: 1_000_000, probeMs: 500 } : false,
    retry: { attempts: 2, baseDelayMs: 20, maxDelayMs: 50 },
    timeoutMs: 500,
  });
  try {
    const before = ledger();
    const steadyEnd = performance.now() + steadyMs;
    const steady = await draw(
      () => client.next('r'),
      rate,
      () => performance.now() > steadyEnd,
    );
    if (steady.error !== undefined) throw steady.error;
    const after = ledger();
    const reserveIds = client.stats().tags.r?.reserve ?? 0;
    server.child.kill('SIGKILL');
    const killedAt = performance.now();
    const outage = await draw(
      () => client.next('r'),
      rate,
      () => performance.now() - killedAt > 5 * seconds * 1000,
    );
    const coverMs = outage.error === undefined ? Number.NaN : performance.now() - killedAt;
    return {
      rate,
      seconds,
      reserve,
      drawn: steady.drawn,
      allocations: after.rows - before.rows,
      storeIds: after.ids - before.ids,
      reserveIds,
      coverMs,
      servedFromReserve: client.stats().servedFromReserve,
    };
  } finally {
    db.close();
    await client.close().catch(() => {});
    if (server.child.signalCode === null) await stopChild(server.child);
  }
}

/** One run per (rate, reserve on/off): the outage itself is the measurement, so rounds are not repeated. */
export async function benchReserve(
  opts: { rates?: readonly number[]; seconds?: number; steadyMs?: number } = {},
): Promise<ReserveBenchRow[]> {
  const rows: ReserveBenchRow[] = [];
  for (const rate of opts.rates ?? [200, 1000]) {
    for (const reserve of [false, true]) rows.push(await one(rate, opts.seconds ?? 10, reserve, opts.steadyMs ?? 20_000));
  }
  return rows;
}
