/** Runs scenarios one after another, checks each log, and builds the report. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CheckSpec, check } from './checker.js';
import { Context, type Scenario } from './harness/context.js';
import { Rng } from './harness/rng.js';
import { readLog } from './record.js';
import { emptyEvidence, outcome, type RunReport, type ScenarioReport, summarize } from './report.js';
import type { Watchdog } from './watchdog.js';

export interface RunOptions {
  /** The package's dist directory to run (default: this checkout's). */
  readonly dist: string;
  readonly seed: number;
  readonly long: boolean;
  /** Where each scenario's directory (logs, data, state) goes; a temp dir by default. */
  readonly workDir?: string;
  /** Keep the scenario directories (default: only those of failed scenarios). */
  readonly keep?: boolean;
  readonly log?: (line: string) => void;
  /** Kills the run when a scenario overruns its limit by a minute (a loop that never yields escapes every timer of this thread). */
  readonly watchdog?: Watchdog | undefined;
}

export async function runScenario(s: Scenario, o: RunOptions, seed: number): Promise<ScenarioReport> {
  const base = o.workDir ?? tmpdir();
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, `torture-${s.name}-`));
  const ctx = new Context(o.dist, dir, new Rng(seed), o.long);
  const t0 = Date.now();
  let failure: string | undefined;
  let spec: CheckSpec = {};
  let timer: NodeJS.Timeout | undefined;
  // Every scenario bounds its own phases; this bounds the scenario whatever hangs.
  const limitMs = o.long ? 20 * 60_000 : 5 * 60_000;
  o.watchdog?.arm(limitMs + 2 * 60_000, `scenario ${s.name} still running ${limitMs / 60_000 + 2} minutes after it started`);
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`scenario did not finish in ${limitMs / 60_000} minutes`)), limitMs);
    });
    spec = await Promise.race([s.run(ctx), timeout]);
  } catch (e) {
    failure = e instanceof Error ? e.message.slice(0, 2000) : String(e);
  } finally {
    clearTimeout(timer);
    await ctx.cleanup();
  }
  const t1 = Date.now();
  let records: ReturnType<typeof readLog> = [];
  try {
    records = readLog(ctx.logDir);
  } catch {
    // no client ran
  }
  // Time fields may sit up to the largest clock jump away from the harness's clock.
  const result = check(records, { window: { from: t0, to: t1, slackMs: 2 * 3600_000 }, ...spec });
  failure ??= emptyEvidence(result.idsChecked, spec.refused, ctx.faultsNotSeen());
  const report: ScenarioReport = {
    name: s.name,
    about: s.about,
    seed,
    seconds: Math.round((t1 - t0) / 100) / 10,
    failure,
    notes: ctx.notes,
    refused: spec.refused,
    result,
  };
  const ok = failure === undefined && result.ok;
  o.log?.(
    `${outcome(report)} ${s.name}: ${result.idsChecked} IDs, ${result.counts.repeats} repeats, availability ${result.availability}% (${report.seconds} s)${failure ? `: ${failure.split('\n')[0]}` : ''}`,
  );
  if (ok && !o.keep) rmSync(dir, { recursive: true, force: true });
  else o.log?.(`  kept ${dir}`);
  return report;
}

/** A scenario's seed from the run's seed and its name: the same with --only as in the whole set. */
export function scenarioSeed(seed: number, name: string): number {
  let h = seed >>> 0;
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

export async function runSet(scenarios: readonly Scenario[], set: string, o: RunOptions): Promise<RunReport> {
  // The commit as it was when the run began (with `+changes` when the tree differed from it).
  let commit = 'unknown';
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    commit = git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') === '' ? '' : '+changes');
  } catch {
    // not a checkout
  }
  const reports: ScenarioReport[] = [];
  for (const s of scenarios) reports.push(await runScenario(s, o, scenarioSeed(o.seed, s.name)));
  return summarize(set, o.seed, commit, reports);
}
