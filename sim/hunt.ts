/**
 * Hunting a planted bug: the first seed (from 1) whose run with the plant
 * finds something the same seed without it does not. A seed that fails
 * without the plant too (a real bug, sim/regression-seeds.json) proves nothing
 * about the plant and is skipped.
 */
import { plantWorlds, runSeed, type SeedOptions, type SeedResult } from './run.js';

export interface Hunt {
  readonly plant: string;
  /** The seed that found it, and that run; undefined when none of the seeds did. */
  readonly found: SeedResult | undefined;
  readonly seedsRun: number;
}

export async function hunt(plant: string, maxSeeds: number, o: Omit<SeedOptions, 'plant'> = {}): Promise<Hunt> {
  let n = 0;
  o = { ...o, ...plantWorlds(plant) };
  for (let seed = 1; seed <= maxSeeds; seed++) {
    n++;
    const planted = await runSeed(seed, { ...o, plant });
    if (planted.findings.length === 0) continue;
    const clean = await runSeed(seed, o);
    if (clean.findings.length === 0) return { plant, found: planted, seedsRun: n };
  }
  return { plant, found: undefined, seedsRun: n };
}
