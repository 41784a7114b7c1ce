/**
 * Runs `sequoia bench pk` against one target: the same rows (same payload,
 * same secondary-index values) inserted into one table per kind of primary key,
 * after a warm-up, in slices that visit the kinds in an interleaved order, by
 * `concurrency` clients at once. Counters (WAL/redo bytes, page splits) are read
 * around every slice of every kind, so each kind is charged for its own slices.
 */
import { type Clock, monotonicMs } from '../core/clock.js';
import type { Random } from '../core/random.js';
import { delay, systemTimers, type Timers } from '../core/timers.js';
import { interleavedOrder, type PkKind, pkKeySource, type PkKeySource, pkRowColumns, quantile } from '../core/pk-bench/pk-kinds.js';
import type { PkBenchTarget, PkCounters, PkRow, PkTargetInfo } from '../ports/pk-bench-target.js';

export interface PkBenchOptions {
  readonly kinds: readonly PkKind[];
  /** Measured rows per kind. */
  readonly rows: number;
  /** Rows inserted per kind before measuring (not timed; they stay in the table). */
  readonly warmup: number;
  /** Rows per INSERT statement. */
  readonly batch: number;
  /** Clients inserting at once (capped by the target, e.g. 1 for SQLite). */
  readonly concurrency: number;
  readonly width: number;
  readonly indexes: number;
  /** Simulated ID servers (segment, snowflake). */
  readonly servers: number;
  /** Segment length per simulated server. */
  readonly step: number;
  /** Slices the measured rows are cut into, each visiting every kind. */
  readonly slices: number;
}

export interface PkKindResult {
  readonly kind: string;
  readonly keyColumn: string;
  readonly rows: number;
  readonly seconds: number;
  readonly rowsPerSecond: number;
  /** INSERT statements measured (of up to `batch` rows: a slice's last one may be smaller): what p50 and p99 are taken over. */
  readonly statements: number;
  /** Latency of one measured INSERT statement, ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly tableBytes: number;
  readonly indexBytes: number;
  readonly totalBytes: number;
  /** WAL/redo bytes written during this kind's measured slices (server-wide counter). */
  readonly logBytes: number | null;
  readonly pageSplits: number | null;
  /** Against the baseline (`sequence`): insert time (baseline rows/s ÷ rows/s), total size, WAL/redo bytes. */
  readonly vsBaseline: { readonly time: number; readonly size: number; readonly log: number | null };
}

export interface PkBenchResult {
  readonly target: PkTargetInfo;
  readonly options: Omit<PkBenchOptions, 'kinds'> & { readonly kinds: readonly string[] };
  readonly startedAt: string;
  readonly seconds: number;
  readonly results: readonly PkKindResult[];
  /** True when a signal stopped the run early (the results cover the rows inserted until then). */
  readonly interrupted: boolean;
}

export interface PkProgress {
  readonly done: number;
  readonly total: number;
  readonly kind: string;
  readonly phase: 'warm-up' | 'measure' | 'sizes';
}

export interface PkRunHooks {
  readonly clock: Clock;
  readonly random: Random;
  readonly onProgress?: (p: PkProgress) => void;
  readonly signal?: AbortSignal;
  /** Where the loop turns are waited for. Default node's timers. */
  readonly timers?: Timers;
}

/** How long the run may keep the event loop from turning (signals, timers), in ms. */
const LOOP_TURN_MS = 50;

interface KindState {
  readonly kind: PkKind;
  readonly keys: PkKeySource;
  keyColumn: string;
  /** Next row number of the shared workload. */
  nextRow: number;
  /** Statements made, to rotate the simulated server per statement. */
  statements: number;
  seconds: number;
  measuredRows: number;
  latencies: number[];
  logBytes: number | null;
  pageSplits: number | null;
}

/**
 * Creates the scratch object, runs, measures sizes and returns the result. The
 * caller owns the target: it calls dropScratch() and close() whatever happens
 * (the CLI does so in `finally`, and on SIGINT through `signal`).
 */
export async function runPkBench(target: PkBenchTarget, options: PkBenchOptions, hooks: PkRunHooks): Promise<PkBenchResult> {
  const startedAt = new Date(hooks.clock.now()).toISOString();
  const t0 = monotonicMs(hooks.clock);
  const info = await target.createScratch();
  const concurrency = Math.max(1, Math.min(options.concurrency, info.maxConcurrency));
  const states = await createTables(target, options, hooks);

  const total = states.length * (options.warmup + options.rows);
  let done = 0;
  const aborted = () => hooks.signal?.aborted === true;
  const progress = (kind: string, phase: PkProgress['phase']) => hooks.onProgress?.({ done, total, kind, phase });

  const letLoopTurn = loopTurner(hooks.clock, hooks.timers ?? systemTimers);

  /** Inserts `count` rows of one kind with `concurrency` clients; answers the wall time in seconds. */
  const insertRows = async (s: KindState, count: number, record: boolean, phase: PkProgress['phase']): Promise<number> => {
    let left = count;
    const startMs = monotonicMs(hooks.clock);
    const worker = async () => {
      while (left > 0 && !aborted()) {
        await letLoopTurn();
        // Another client may have taken the last rows meanwhile: an empty statement is no statement (timed, it was a 0 ms latency).
        if (aborted() || left <= 0) break;
        const n = Math.min(options.batch, left);
        left -= n;
        const server = s.statements++ % options.servers;
        const rows: PkRow[] = [];
        for (let i = 0; i < n; i++) {
          const { ints, payload } = pkRowColumns(s.nextRow++, options.width, options.indexes);
          rows.push({ key: s.keys.next(server), ints, payload });
        }
        const a = monotonicMs(hooks.clock);
        await target.insert(s.kind, rows);
        if (record) {
          s.latencies.push(monotonicMs(hooks.clock) - a);
          s.measuredRows += n;
        }
        done += n;
        progress(s.kind.name, phase);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return (monotonicMs(hooks.clock) - startMs) / 1000;
  };

  await runPhases(target, options, states, aborted, insertRows);

  const results: Omit<PkKindResult, 'vsBaseline'>[] = [];
  for (const s of states) {
    progress(s.kind.name, 'sizes');
    results.push(kindResult(s, await target.size(s.kind)));
  }
  const { kinds, ...rest } = options;
  return {
    target: info,
    options: { ...rest, concurrency, kinds: kinds.map((k) => k.name) },
    startedAt,
    seconds: (monotonicMs(hooks.clock) - t0) / 1000,
    interrupted: aborted(),
    results: againstBaseline(results),
  };
}

/**
 * A target whose driver is synchronous (SQLite) resolves every insert at once: the loop would never turn, and
 * Ctrl-C (a signal handler, like any timer or I/O callback) would wait for the whole run. So the clients let the
 * loop turn at least every LOOP_TURN_MS.
 */
function loopTurner(clock: Clock, timers: Timers): () => Promise<void> {
  let lastTurn = monotonicMs(clock);
  return async () => {
    if (monotonicMs(clock) - lastTurn < LOOP_TURN_MS) return;
    await delay(timers, 0); // the next turn (setImmediate)
    lastTurn = monotonicMs(clock);
  };
}

/** The warm-up, then the measured rows in slices, the kinds interleaved in each (with the target's counters around each kind's slice). */
async function runPhases(
  target: PkBenchTarget,
  options: PkBenchOptions,
  states: readonly KindState[],
  aborted: () => boolean,
  insertRows: (s: KindState, count: number, record: boolean, phase: PkProgress['phase']) => Promise<number>,
): Promise<void> {
  if (options.warmup > 0) {
    for (const s of interleavedOrder(states, 0)) {
      if (aborted()) break;
      await insertRows(s, options.warmup, false, 'warm-up');
    }
  }
  const slices = Math.max(1, Math.min(options.slices, options.rows));
  for (let slice = 0; slice < slices && !aborted(); slice++) {
    const count = Math.floor(options.rows / slices) + (slice < options.rows % slices ? 1 : 0);
    for (const s of interleavedOrder(states, slice)) {
      if (aborted()) break;
      const before = await target.counters();
      s.seconds += await insertRows(s, count, true, 'measure');
      const after = await target.counters();
      s.logBytes = addDiff(s.logBytes, before, after, 'logBytes');
      s.pageSplits = addDiff(s.pageSplits, before, after, 'pageSplits');
    }
  }
}

/** One state per kind, each with its scratch table made. */
async function createTables(target: PkBenchTarget, options: PkBenchOptions, hooks: PkRunHooks): Promise<KindState[]> {
  const states: KindState[] = options.kinds.map((kind) => ({
    kind,
    keys: pkKeySource(kind, { clock: hooks.clock, random: hooks.random, servers: options.servers, step: options.step }),
    keyColumn: '',
    nextRow: 0,
    statements: 0,
    seconds: 0,
    measuredRows: 0,
    latencies: [],
    logBytes: null,
    pageSplits: null,
  }));
  for (const s of states) s.keyColumn = await target.createTable(s.kind, { width: options.width, indexes: options.indexes });
  return states;
}

/** A kind's measured figures and sizes. */
function kindResult(s: KindState, size: { tableBytes: number; indexBytes: number }): Omit<PkKindResult, 'vsBaseline'> {
  const lat = Float64Array.from(s.latencies);
  return {
    kind: s.kind.name,
    keyColumn: s.keyColumn,
    rows: s.measuredRows,
    seconds: s.seconds,
    rowsPerSecond: s.seconds > 0 ? s.measuredRows / s.seconds : 0,
    statements: lat.length,
    p50Ms: quantile(lat, 0.5),
    p99Ms: quantile(lat, 0.99),
    tableBytes: size.tableBytes,
    indexBytes: size.indexBytes,
    totalBytes: size.tableBytes + size.indexBytes,
    logBytes: s.logBytes,
    pageSplits: s.pageSplits,
  };
}

/** Each kind against the baseline (the sequence kind, else the first). */
function againstBaseline(results: readonly Omit<PkKindResult, 'vsBaseline'>[]): PkKindResult[] {
  const base = results.find((r) => r.kind === 'sequence') ?? results[0];
  const ratio = (a: number | null, b: number | null | undefined): number | null =>
    a === null || b === null || b === undefined || b <= 0 ? null : a / b;
  return results.map((r) => ({
    ...r,
    vsBaseline: {
      time: ratio(base?.rowsPerSecond ?? null, r.rowsPerSecond) ?? 0,
      size: ratio(r.totalBytes, base?.totalBytes) ?? 0,
      log: ratio(r.logBytes, base?.logBytes),
    },
  }));
}

function addDiff(acc: number | null, before: PkCounters, after: PkCounters, key: keyof PkCounters): number | null {
  const a = before[key];
  const b = after[key];
  if (a === null || b === null) return acc;
  return (acc ?? 0) + Math.max(0, b - a);
}
