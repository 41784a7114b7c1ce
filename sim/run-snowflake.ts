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
    const arrive = (): void => {
      const burst = traffic.chance(0.1) ? traffic.int(2, 8) : 1;
      for (let i = 0; i < burst; i++) world.request();
      if (sched.now < chaosMs + healMs) sched.after(traffic.float() * 2 * world.requestGapMs, undefined, arrive);
    };
    sched.after(0, undefined, arrive);
    let nFaults = 0;
    const chaos = (): void => {
      nFaults++;
      world.chaos();
      const next = sched.now + 200 + faults.float() * 2600;
      if (next < chaosMs) sched.at(next, undefined, chaos);
    };
    sched.after(500, undefined, chaos);
    sched.at(chaosMs, undefined, () => world.heal());
    const probe = (): void => {
      world.probe();
      if (sched.now < chaosMs + healMs - 500) sched.after(500, undefined, probe);
    };
    sched.at(chaosMs + 2000, undefined, probe);
    const stop = (): boolean => world.checker.findings.length > 0;
    await sched.run(chaosMs + healMs, () => {}, stop);
    if (!stop()) world.checkLiveness();
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
