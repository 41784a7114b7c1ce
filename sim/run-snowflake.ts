/**
 * One seed of the snowflake world (model/snowflake-world.ts), start to end:
 * set up the servers, run the chaos phase (requests, faults and operator
 * actions drawn from the seed), heal, check liveness. Same shape of result as
 * a segment seed (run.ts), so the report, the hunt and the test take both.
 */
import { createHash } from 'node:crypto';
import { Prng } from './engine/prng.js';
import { Scheduler } from './engine/scheduler.js';
import { SnowflakeWorld } from './model/snowflake-world.js';
import { runPhases } from './phases.js';
import { PLANTS } from './plants.js';
import type { SeedOptions, SeedResult } from './run.js';

export async function runSnowflakeSeed(seed: number, o: SeedOptions = {}): Promise<SeedResult> {
  const chaosMs = o.chaosMs ?? 60_000;
  const healMs = o.healMs ?? 20_000;
  const root = new Prng(seed);
  const sched = new Scheduler(root.fork());
  const world = new SnowflakeWorld(sched, root.fork(), { chaosMs, healMs });
  const plant = o.plant === undefined ? undefined : PLANTS[o.plant];
  if (o.plant !== undefined && plant?.world !== 'snowflake') throw new RangeError(`no snowflake plant named ${o.plant}`);
  const uninstall = plant?.install(world as never);
  try {
    world.setUp();
    const traffic = root.fork();
    const faults = root.fork();
    const nFaults = await runPhases(sched, {
      chaosMs,
      healMs,
      traffic: { rng: traffic, gapMs: world.requestGapMs, request: () => world.request() },
      faults,
      gapMs: [200, 2600],
      chaos: () => world.chaos(),
      heal: () => world.heal(),
      probe: () => world.probe(),
      failed: () => world.checker.findings.length > 0,
      checkLiveness: () => world.checkLiveness(),
    });
    const c = world.checker;
    for (const f of c.findings) sched.log(`FINDING ${f.kind}: ${f.message}`);
    const hash = createHash('sha256').update(sched.trace.join('\n')).digest('hex');
    const notable = sched.trace.filter((l) => / (FAULT|OP|HEAL|FINDING|restart|resume|release|renew-refused) /.test(l));
    return {
      seed,
      world: 'snowflake',
      plant: o.plant,
      findings: c.findings,
      hash,
      events: sched.events,
      simMs: sched.now,
      answered: c.answered,
      faults: nFaults,
      coverage: world.coverage,
      shortTrace: notable.slice(-30),
      trace: sched.trace,
    };
  } finally {
    world.close();
    uninstall?.();
  }
}
