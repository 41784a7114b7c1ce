/**
 * `sequoia bench pk --db URL`: measures, on the user's own database, what each
 * kind of primary key costs at insert (rows/s, latency, size, WAL/redo bytes,
 * page splits) against the database's own sequence. Works only inside a
 * scratch schema/database/file it creates and drops; Ctrl-C stops the run and
 * still drops it. The drivers and the runner load only when the command runs.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../core/errors.js';
import { PK_KIND_NAMES } from '../core/pk-bench/pk-kind-names.js';
import type { PkProgress } from '../app/pk-bench.js';

interface PkOpts {
  db: string;
  rows: number;
  warmup: number;
  batch: number;
  concurrency: number;
  width: number;
  indexes: number;
  servers: number;
  step: number;
  slices: number;
  kinds?: string;
  scratch?: string;
  json?: boolean;
  chart?: string;
  progress: boolean;
  dropLeftover?: boolean;
}

function intIn(name: string, min: number, max: number) {
  return (v: string): number => {
    if (!/^[0-9]+$/.test(v) || Number(v) < min || Number(v) > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return Number(v);
  };
}

export function registerBenchPk(bench: Command): void {
  bench
    .command('pk')
    .description(
      'measure primary keys of each kind (sequence, segment, snowflake, UUIDv7, UUIDv4, ULID) on your database, in a scratch schema it creates and drops',
    )
    .requiredOption('--db <url>', 'postgres://…, mysql://… (MySQL or MariaDB) or sqlite:PATH (a new file)')
    .option('--rows <n>', 'measured rows per kind', intIn('--rows', 1, 100_000_000), 100_000)
    .option('--warmup <n>', 'rows per kind inserted before measuring', intIn('--warmup', 0, 10_000_000), 2_000)
    .option('--batch <n>', 'rows per INSERT statement', intIn('--batch', 1, 1_000), 100)
    .option('--concurrency <n>', 'clients inserting at once (SQLite: 1)', intIn('--concurrency', 1, 64), 4)
    .option('--width <bytes>', 'payload bytes per row', intIn('--width', 1, 4_000), 100)
    .option('--indexes <n>', 'secondary indexes (one per integer column)', intIn('--indexes', 0, 8), 1)
    .option('--servers <n>', 'simulated ID servers issuing segment and snowflake keys at once', intIn('--servers', 1, 1_024), 4)
    .option('--step <n>', 'segment length each simulated server takes', intIn('--step', 1, 1_000_000), 1_000)
    .option('--slices <n>', 'slices the rows are cut into; each visits every kind, in rotating order', intIn('--slices', 1, 1_000), 10)
    .option('--kinds <list>', `comma-separated subset of ${PK_KIND_NAMES.join(', ')} (the sequence baseline always runs); default all`)
    .option('--scratch <name>', 'scratch schema (PostgreSQL) or database (MySQL) to create and drop; default sequoia_bench_pk')
    .option('--json', 'print the result as JSON')
    .option('--chart <file.svg>', 'also write an SVG chart of the result')
    .option('--no-progress', 'no progress bar (it is drawn only when stderr is a terminal)')
    .option(
      '--drop-leftover',
      'drop a scratch object left by an interrupted run (only one whose marker says it was made by this tool), then exit',
    )
    .action(async (o: PkOpts) => {
      await benchPk(o);
    });
}

async function benchPk(o: PkOpts): Promise<void> {
  const { parsePkKinds } = await import('../core/pk-bench/pk-kinds.js');
  const kinds = parsePkKinds(o.kinds);
  if (o.chart !== undefined && !/\.svg$/i.test(o.chart))
    throw new InvalidArgumentError(`--chart writes SVG: name a .svg file, got ${JSON.stringify(o.chart)}`);
  const { openPkBenchTarget, runPkBench } = await import('../app/pk-bench.js');
  const { formatPkReport, pkChartSvg } = await import('./pk-report.js');
  const { systemClock } = await import('../core/clock.js');
  const { systemRandom } = await import('../core/random.js');
  const { redactStoreUrl } = await import('../app/stores.js');

  const target = await openPkBenchTarget(o.db, { scratch: o.scratch, concurrency: o.concurrency });
  if (o.dropLeftover) {
    try {
      console.log(await target.dropLeftover());
    } finally {
      await target.close();
    }
    return;
  }

  const stop = new AbortController();
  const stopListening = stopOnSignals(stop);
  const bar = o.progress && process.stderr.isTTY ? progressBar() : undefined;
  let result: Awaited<ReturnType<typeof runPkBench>> | undefined;
  let failure: unknown;
  try {
    result = await runPkBench(
      target,
      {
        kinds,
        rows: o.rows,
        warmup: o.warmup,
        batch: o.batch,
        concurrency: o.concurrency,
        width: o.width,
        indexes: o.indexes,
        servers: o.servers,
        step: o.step,
        slices: o.slices,
      },
      { clock: systemClock, random: systemRandom, signal: stop.signal, onProgress: bar?.update },
    );
  } catch (e) {
    failure = e;
  }
  bar?.done();
  // The scratch object goes whatever happened; a failure to drop it is said, and does not hide the run's own error.
  try {
    await target.dropScratch();
  } catch (e) {
    if (failure === undefined) failure = e;
    else process.stderr.write(`sequoia: could not drop the scratch object: ${e instanceof Error ? e.message : String(e)}\n`);
  } finally {
    await target.close();
    stopListening();
  }
  if (failure !== undefined || result === undefined) throw failure;
  if (result.interrupted) {
    process.stderr.write('sequoia: interrupted; the scratch objects are dropped\n');
    process.exitCode = 130;
    return;
  }
  if (o.chart !== undefined) writeFileSync(o.chart, pkChartSvg(result));
  if (o.json) console.log(JSON.stringify({ db: redactStoreUrl(o.db), ...result }, null, 2));
  else process.stdout.write(formatPkReport(result));
}

/**
 * Ctrl-C (or SIGTERM) stops the run after the statements in flight, so the scratch objects are dropped; a second one
 * exits at once. Returns the function that stops listening.
 */
function stopOnSignals(stop: AbortController): () => void {
  const onSignal = (sig: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      process.stderr.write(
        `\nsequoia: ${sig} again: exiting now; a scratch object may be left (sequoia bench pk --db URL --drop-leftover removes it)\n`,
      );
      process.exit(130);
    }
    stop.abort();
    process.stderr.write(`\nsequoia: ${sig}: stopping after the statements in flight, then dropping the scratch objects…\n`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/** A one-line bar on stderr, redrawn at most every 100 ms. */
function progressBar(): { update: (p: PkProgress) => void; done: () => void } {
  let last = -Infinity;
  const draw = (p: PkProgress) => {
    const frac = p.total > 0 ? p.done / p.total : 0;
    const filled = Math.round(frac * 30);
    process.stderr.write(
      `\r[${'#'.repeat(filled)}${'.'.repeat(30 - filled)}] ${(frac * 100).toFixed(0).padStart(3)}%  ${p.done.toLocaleString('en-US')}/${p.total.toLocaleString('en-US')} rows  ${p.phase} ${p.kind}\x1b[K`,
    );
  };
  return {
    update: (p) => {
      const now = performance.now();
      if (now - last < 100 && p.done < p.total) return;
      last = now;
      draw(p);
    },
    done: () => process.stderr.write('\r\x1b[K'),
  };
}
