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
import { runSnowflakeSeed } from './run-snowflake.js';

export interface SeedOptions {
  readonly plant?: string | undefined;
  /** Simulated ms of faults; default 60,000. */
  readonly chaosMs?: number;
  /** Simulated ms after every fault healed; default 20,000. */
  readonly healMs?: number;
  /** Which world: the segment cluster (default) or snowflake (model/snowflake-world.ts; a snowflake plant implies it). */
  readonly world?: 'segment' | 'snowflake' | undefined;
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
    // Requests: a few dozen a second over the cluster, in bursts.
    const arrive = (): void => {
      const burst = traffic.chance(0.1) ? traffic.int(2, 8) : 1;
      for (let i = 0; i < burst; i++) cluster.request();
      if (sched.now < chaosMs + healMs) sched.after(traffic.float() * 2 * cluster.mix.gapMs, undefined, arrive);
    };
    sched.after(0, undefined, arrive);
    let nFaults = 0;
    const chaos = (): void => {
      nFaults++;
      void cluster.chaos();
      const next = sched.now + 200 + faults.float() * 2600;
      if (next < chaosMs) sched.at(next, undefined, chaos);
    };
    sched.after(500, undefined, chaos);
    const snap = (): void => {
      void cluster.store.snapshot();
      if (sched.now < chaosMs) sched.after(1000, undefined, snap);
    };
    sched.after(0, undefined, snap);
    sched.at(chaosMs, undefined, () => cluster.heal());
    const probe = (): void => {
      cluster.probe();
      if (sched.now < chaosMs + healMs - 500) sched.after(500, undefined, probe);
    };
    sched.at(chaosMs + 2000, undefined, probe);
    const stop = (): boolean => cluster.checker.findings.length > 0;
    await sched.run(chaosMs + healMs, () => {}, stop);
    if (!stop()) cluster.checkLiveness();
    const c = cluster.checker;
    for (const f of c.findings) sched.log(`FINDING ${f.kind}: ${f.message}`);
    const hash = createHash('sha256').update(sched.trace.join('\n')).digest('hex');
    const notable = sched.trace.filter((l) => / (FAULT|OP|HEAL|FINDING|restart|resume) /.test(l));
    return {
      seed,
      plant: o.plant,
      findings: c.findings,
      hash,
      events: sched.events,
      simMs: sched.now,
      answered: c.answered,
      faults: nFaults,
      coverage: cluster.coverage,
      shortTrace: notable.slice(-30),
      trace: sched.trace,
    };
  } finally {
    uninstall?.();
  }
}
