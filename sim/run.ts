/**
 * One seed, start to end: set up the cluster, run the chaos phase (requests,
 * faults and operator actions drawn from the seed), heal, check liveness.
 * The trace is every event the model logged; its sha256 names the run.
 */
import { createHash } from 'node:crypto';
import { Prng } from './engine/prng.js';
import { Scheduler } from './engine/scheduler.js';
import { Cluster } from './model/cluster.js';
import type { Finding } from './model/checker.js';
import { PLANTS } from './plants.js';
import { runPhases } from './phases.js';
import { runSnowflakeSeed } from './run-snowflake.js';
import { runWorld, WORLDS, type World, type WorldResult } from './worlds.js';

export interface SeedOptions {
  readonly plant?: string | undefined;
  /** Simulated ms of faults; default 60,000. */
  readonly chaosMs?: number;
  /** Simulated ms after every fault healed; default 20,000. */
  readonly healMs?: number;
  /** Which world: the segment cluster (default) or snowflake (model/snowflake-world.ts; a snowflake plant implies it). */
  readonly world?: 'segment' | 'snowflake' | undefined;
  /** The worlds run after the cluster's (sim/worlds.ts); default all of them. */
  readonly worlds?: readonly World[];
}

export interface SeedResult {
  readonly seed: number;
  readonly plant: string | undefined;
  readonly findings: readonly Finding[];
  readonly hash: string;
  readonly events: number;
  readonly simMs: number;
  readonly answered: number;
  readonly faults: number;
  readonly coverage: ReadonlyMap<string, number>;
  /** The faults and operator actions up to the first finding (the last 30), and the finding. */
  readonly shortTrace: readonly string[];
  /** Every line of the trace. */
  readonly trace: readonly string[];
  /** 'snowflake' for a seed of the snowflake world. */
  readonly world?: 'snowflake';
}

/** The options that run a plant's own world only (the others cannot see it): the snowflake world, or the cluster and one world after it. */
export function plantWorlds(plant: string): Pick<SeedOptions, 'world' | 'worlds'> {
  const w = PLANTS[plant]?.world;
  if (w === 'snowflake') return { world: 'snowflake' };
  return { world: 'segment', worlds: w === undefined ? [] : [w] };
}

export async function runSeed(seed: number, o: SeedOptions = {}): Promise<SeedResult> {
  // Refusals are errors, thousands a seed: capturing their stacks was a tenth of the run. The trace keeps codes and messages.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    const world = o.world ?? (o.plant === undefined ? undefined : PLANTS[o.plant]?.world);
    return await (world === 'snowflake' ? runSnowflakeSeed(seed, o) : oneSeed(seed, o));
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

async function oneSeed(seed: number, o: SeedOptions): Promise<SeedResult> {
  const chaosMs = o.chaosMs ?? 60_000;
  const healMs = o.healMs ?? 20_000;
  const root = new Prng(seed);
  const sched = new Scheduler(root.fork());
  const cluster = new Cluster(sched, root.fork(), { chaosMs, healMs });
  const plant = o.plant === undefined ? undefined : PLANTS[o.plant];
  if (o.plant !== undefined && !plant) throw new RangeError(`no plant named ${o.plant}`);
  await cluster.setUp();
  const uninstall = plant?.install(cluster);
  try {
    const traffic = root.fork();
    const faults = root.fork();
    const nFaults = await runPhases(sched, {
      chaosMs,
      healMs,
      // Requests: a few dozen a second over the cluster, in bursts.
      traffic: { rng: traffic, gapMs: cluster.mix.gapMs, request: () => cluster.request() },
      faults,
      gapMs: [200, 2600],
      chaos: () => void cluster.chaos(),
      snapshot: () => void cluster.store.snapshot(),
      heal: () => cluster.heal(),
      probe: () => cluster.probe(),
      failed: () => cluster.checker.findings.length > 0,
      checkLiveness: () => cluster.checkLiveness(),
    });
    const c = cluster.checker;
    for (const f of c.findings) sched.log(`FINDING ${f.kind}: ${f.message}`);
    const worlds: WorldResult[] = [];
    for (const w of o.worlds ?? WORLDS) worlds.push(await runWorld(w, seed));
    const all = mergeWorlds({ findings: c.findings, trace: sched.trace, coverage: cluster.coverage }, worlds);
    const hash = createHash('sha256').update(all.trace.join('\n')).digest('hex');
    const notable = all.trace.filter((l) => / (FAULT|OP|HEAL|FINDING|restart|resume) /.test(l));
    const sum = (f: (w: WorldResult) => number): number => worlds.reduce((a, w) => a + f(w), 0);
    return {
      seed,
      plant: o.plant,
      findings: all.findings,
      hash,
      events: sched.events + sum((w) => w.events),
      simMs: sched.now + sum((w) => w.simMs),
      answered: c.answered + sum((w) => w.answered),
      faults: nFaults + sum((w) => w.faults),
      coverage: all.coverage,
      shortTrace: notable.slice(-30),
      trace: all.trace,
    };
  } finally {
    uninstall?.();
  }
}

/** The cluster's findings, trace and coverage with each world's after them (its trace lines and findings named by it). */
function mergeWorlds(
  cluster: { findings: readonly Finding[]; trace: readonly string[]; coverage: ReadonlyMap<string, number> },
  worlds: readonly WorldResult[],
): { findings: Finding[]; trace: string[]; coverage: Map<string, number> } {
  const findings = [...cluster.findings];
  const trace = [...cluster.trace];
  const coverage = new Map(cluster.coverage);
  for (const w of worlds) {
    for (const line of w.trace) trace.push(`${w.world}| ${line}`);
    for (const f of w.findings) {
      findings.push({ ...f, message: `[${w.world} world] ${f.message}` });
      trace.push(`${w.world}| ${f.at.toFixed(0).padStart(7)} FINDING ${f.kind}: ${f.message}`);
    }
    for (const [k, n] of w.coverage) coverage.set(k, (coverage.get(k) ?? 0) + n);
  }
  return { findings, trace, coverage };
}
