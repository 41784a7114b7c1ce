/**
 * The simulator's own checks (docs/torture.md, "The simulator"): a seed
 * replays byte for byte; the regression seeds keep their verdicts; each
 * planted bug is found by the seed recorded for it (at most 100: `npm run
 * sim -- --hunt NAME` finds it again from seed 1 when the model changes),
 * and the same seed without the plant is clean.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PLANTS } from './plants.js';
import { failureReport } from './report.js';
import { runSeed } from './run.js';

interface Regression {
  readonly seed: number;
  /** 'clean', or the finding kind a known production bug still causes (the test flips when it is fixed). */
  readonly expect: string;
  readonly why: string;
}
interface Seeds {
  readonly regressions: readonly Regression[];
  /** The seed that finds each plant; null: none of seeds 1-100 did (reported, not hidden). */
  readonly plants: Readonly<Record<string, number | null>>;
}

const seeds = JSON.parse(readFileSync(new URL('./regression-seeds.json', import.meta.url), 'utf8')) as Seeds;

describe('the simulator', () => {
  it('replays a seed byte for byte (same trace hash twice)', async () => {
    for (const seed of [3, 8]) {
      const a = await runSeed(seed, { chaosMs: 20_000 });
      const b = await runSeed(seed, { chaosMs: 20_000 });
      expect(a.events).toBeGreaterThan(1000);
      expect(b.hash).toBe(a.hash);
    }
  });

  it.each(seeds.regressions.map((r) => [r.seed, r.expect, r.why] as const))('regression seed %i: %s (%s)', async (seed, want) => {
    const r = await runSeed(seed);
    if (want === 'clean') expect(r.findings, failureReport(r)).toEqual([]);
    else
      expect(
        r.findings.map((f) => f.kind),
        `seed ${seed} no longer finds ${want}: the bug is fixed? make it 'clean'`,
      ).toContain(want);
  });

  it('has a recorded seed for every plant', () => {
    expect(Object.keys(seeds.plants).sort()).toEqual(Object.keys(PLANTS).sort());
  });

  const found = Object.entries(seeds.plants).filter((e): e is [string, number] => e[1] !== null);
  for (const [plant] of Object.entries(seeds.plants).filter(([, s]) => s === null))
    it.todo(`find the planted bug ${plant} within 100 seeds`);

  it.each(found)('finds the planted bug %s (seed %i), which the seed without it does not', async (plant, seed) => {
    expect(seed).toBeLessThanOrEqual(100);
    // The plant's own world only (sim/worlds.ts): the others cannot see it.
    const world = PLANTS[plant]?.world;
    const worlds = world === undefined ? [] : [world];
    const planted = await runSeed(seed, { plant, worlds });
    expect(planted.findings.length, `plant ${plant} survived seed ${seed}`).toBeGreaterThan(0);
    const report = failureReport(planted);
    expect(report).toContain(`FAILED seed ${seed} (plant ${plant})`);
    expect(report).toContain(`replay: npm run sim -- --seed ${seed} --plant ${plant}`);
    expect(planted.shortTrace.length).toBeGreaterThan(0);
    const clean = await runSeed(seed, { worlds });
    expect(clean.findings, failureReport(clean)).toEqual([]);
  });
});
