/**
 * The worlds a seed runs after the cluster world (run.ts): each on its own
 * scheduler and its own generator derived from the seed, so adding one does
 * not change another's trace. `client`: the client SDK against a cluster
 * (model/client-world.ts); `multi`: servers over a multi-store set
 * (model/multi-world.ts); `migrate`: migration from a peer table that keeps
 * allocating (model/migrate-world.ts).
 */
import { Prng } from './engine/prng.js';
import { Scheduler } from './engine/scheduler.js';
import type { Finding } from './model/checker.js';
import { ClientWorld } from './model/client-world.js';
import { Cluster } from './model/cluster.js';
import { runMigrateWorld } from './model/migrate-world.js';
import { runMultiWorld } from './model/multi-world.js';
import { runPhases, worldResult } from './phases.js';

export const WORLDS = ['client', 'multi', 'migrate'] as const;
export type World = (typeof WORLDS)[number];

export interface WorldResult {
  readonly world: World;
  readonly findings: readonly Finding[];
  readonly trace: readonly string[];
  readonly coverage: ReadonlyMap<string, number>;
  readonly events: number;
  readonly simMs: number;
  readonly answered: number;
  readonly faults: number;
}

/** Distinct per world, so each world's stream of the seed is its own. */
const SALT: Record<World, number> = { client: 0x5eed_c11e, multi: 0x5eed_3017, migrate: 0x5eed_9a7e };

export async function runWorld(world: World, seed: number): Promise<WorldResult> {
  const root = new Prng((seed ^ SALT[world]) >>> 0);
  const sched = new Scheduler(root.fork());
  if (world === 'multi') return runMultiWorld(sched, root);
  if (world === 'migrate') return runMigrateWorld(sched, root);
  return runClientWorld(sched, root);
}

/** The client world: 20 simulated s of cluster and client faults, 10 s of heal. */
async function runClientWorld(sched: Scheduler, root: Prng): Promise<WorldResult> {
  const chaosMs = 20_000;
  const healMs = 10_000;
  const cluster = new Cluster(sched, root.fork(), { chaosMs, healMs });
  await cluster.setUp();
  const world = new ClientWorld(sched, root.fork(), cluster);
  const faults = root.fork();
  world.start(chaosMs + healMs);
  const nFaults = await runPhases(sched, {
    chaosMs,
    healMs,
    faults,
    gapMs: [300, 2000],
    chaos: () => {
      if (faults.chance(0.4)) void cluster.chaos();
      else world.chaos();
    },
    snapshot: () => void cluster.store.snapshot(),
    heal: () => {
      cluster.heal();
      world.heal();
    },
    probe: () => cluster.probe(),
    failed: () => cluster.checker.findings.length > 0,
    checkLiveness: () => {
      cluster.checkLiveness();
      world.checkLiveness(chaosMs + healMs - 3000);
    },
  });
  return worldResult('client', sched, cluster, nFaults, cluster.checker.answered + world.handedOut);
}
