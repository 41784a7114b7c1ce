/**
 * The simulator's own checks (docs/torture.md, "The simulator"): a seed
 * replays byte for byte; the regression seeds keep their verdicts; each
 * planted bug is found by the seed recorded for it (at most 100: `npm run
 * sim -- --hunt NAME` finds it again from seed 1 when the model changes),
 * and the same seed without the plant is clean. The CI run: seeds 1 to
 * CI_SEEDS, each with its recorded verdict (clean unless a regression seed
 * says otherwise), and every fault kind and operator action fired.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Prng } from './engine/prng.js';
import { Scheduler } from './engine/scheduler.js';
import { ACTIONS, SEQUENCES } from './model/cluster.js';
import { SF_COVERAGE } from './model/snowflake-world.js';
import { PLANTS } from './plants.js';
import { failureReport } from './report.js';
import { plantWorlds, runSeed, type SeedResult } from './run.js';

interface Regression {
  readonly seed: number;
  /** 'clean', or the finding kind a known production bug still causes (the test flips when it is fixed). */
  readonly expect: string;
  readonly why: string;
  /** 'snowflake' for a seed of the snowflake world (model/snowflake-world.ts). */
  readonly world?: 'snowflake';
}
interface Seeds {
  readonly regressions: readonly Regression[];
  /** The seed that finds each plant; null: none of seeds 1-100 did (reported, not hidden). */
  readonly plants: Readonly<Record<string, number | null>>;
}

const seeds = JSON.parse(readFileSync(new URL('./regression-seeds.json', import.meta.url), 'utf8')) as Seeds;

/** The CI run's fixed budget: about 10-15 CPU seconds (BENCHMARKS.md), well inside the 3 minutes. */
const CI_SEEDS = 40;
/** Every snowflake fault, clock policy and mistake fires within these (about 0.4 CPU s a seed). */
const CI_SNOWFLAKE_SEEDS = 16;

function expectVerdict(r: SeedResult, expected: string): void {
  if (expected === 'clean') expect.soft(r.findings, failureReport(r)).toEqual([]);
  else
    expect
      .soft(
        r.findings.map((f) => f.kind),
        `seed ${r.seed} no longer finds ${expected}: fixed? make it 'clean'`,
      )
      .toContain(expected);
}

describe('the simulator', () => {
  it("settles an event's microtasks, however deep, before the next event runs", async () => {
    const sched = new Scheduler(new Prng(1));
    const seen: string[] = [];
    for (let t = 0; t < 600; t += 2) {
      sched.at(t, undefined, () => {
        let p = Promise.resolve();
        for (let i = 0; i < 200; i++) p = p.then(() => {});
        void p.then(async () => {
          for (let i = 0; i < 50; i++) await null;
          seen.push(`chain ${t}`);
        });
      });
      sched.at(t + 1, undefined, () => seen.push(`next ${t + 1}`));
    }
    let checks = 0;
    await sched.run(
      10_000,
      () => checks++,
      () => false,
    );
    expect(checks).toBe(600);
    expect(sched.now).toBe(10_000);
    expect(seen).toEqual(Array.from({ length: 600 }, (_, i) => (i % 2 === 0 ? `chain ${i}` : `next ${i}`)));
  });

  it('replays a seed byte for byte (same trace hash twice)', async () => {
    for (const seed of [3, 8]) {
      const a = await runSeed(seed, { chaosMs: 20_000 });
      const b = await runSeed(seed, { chaosMs: 20_000 });
      expect(a.events).toBeGreaterThan(1000);
      expect(b.hash).toBe(a.hash);
    }
  });

  it(`the CI run: segment seeds 1-${CI_SEEDS} keep their verdicts, and every fault kind and operator action fires`, async () => {
    const want = new Map(seeds.regressions.filter((r) => r.world !== 'snowflake').map((r) => [r.seed, r.expect]));
    const coverage = new Map<string, number>([...ACTIONS, ...SEQUENCES].map((a) => [a, 0]));
    for (let seed = 1; seed <= CI_SEEDS; seed++) {
      const r = await runSeed(seed);
      for (const [k, c] of r.coverage) coverage.set(k, (coverage.get(k) ?? 0) + c);
      expectVerdict(r, want.get(seed) ?? 'clean');
    }
    const never = [...coverage].filter(([, c]) => c === 0).map(([k]) => k);
    expect(never, 'fault kinds and operator actions that never fired in the CI run').toEqual([]);
  }, 180_000);

  it(`the CI run: snowflake seeds 1-${CI_SNOWFLAKE_SEEDS} keep their verdicts, and every fault, policy and mistake fires`, async () => {
    const want = new Map(seeds.regressions.filter((r) => r.world === 'snowflake').map((r) => [r.seed, r.expect]));
    const coverage = new Map<string, number>(SF_COVERAGE.map((a) => [a, 0]));
    for (let seed = 1; seed <= CI_SNOWFLAKE_SEEDS; seed++) {
      const r = await runSeed(seed, { world: 'snowflake' });
      for (const [k, c] of r.coverage) coverage.set(k, (coverage.get(k) ?? 0) + c);
      expectVerdict(r, want.get(seed) ?? 'clean');
    }
    const never = [...coverage].filter(([, c]) => c === 0).map(([k]) => k);
    expect(never, 'snowflake faults, clock policies and mistakes that never fired in the CI run').toEqual([]);
  }, 180_000);

  it('replays a snowflake seed byte for byte (same trace hash twice)', async () => {
    const a = await runSeed(2, { chaosMs: 20_000, world: 'snowflake' });
    const b = await runSeed(2, { chaosMs: 20_000, world: 'snowflake' });
    expect(a.events).toBeGreaterThan(1000);
    expect(b.hash).toBe(a.hash);
  });

  const outsideCiRun = seeds.regressions.filter((r) => r.seed > (r.world === 'snowflake' ? CI_SNOWFLAKE_SEEDS : CI_SEEDS));
  if (outsideCiRun.length > 0)
    it.each(outsideCiRun.map((r) => [r.seed, r.expect, r.why, r.world] as const))(
      'regression seed %i: %s (%s)',
      async (seed, want, _why, world) => {
        expectVerdict(await runSeed(seed, { world }), want);
      },
    );

  it('has a recorded seed for every plant', () => {
    expect(Object.keys(seeds.plants).sort()).toEqual(Object.keys(PLANTS).sort());
  });

  it('has found every plant within 100 seeds (none recorded as null)', () => {
    expect(Object.entries(seeds.plants).filter(([, s]) => s === null || s > 100)).toEqual([]);
  });

  const found = Object.entries(seeds.plants).filter((e): e is [string, number] => e[1] !== null);

  it.each(found)('finds the planted bug %s (seed %i), which the seed without it does not', async (plant, seed) => {
    expect(seed).toBeLessThanOrEqual(100);
    const only = plantWorlds(plant);
    const planted = await runSeed(seed, { plant, ...only });
    expect(planted.findings.length, `plant ${plant} survived seed ${seed}`).toBeGreaterThan(0);
    const report = failureReport(planted);
    expect(report).toContain(`FAILED seed ${seed} (plant ${plant})`);
    expect(report).toContain(`replay: npm run sim -- --seed ${seed} --plant ${plant}`);
    expect(planted.shortTrace.length).toBeGreaterThan(0);
    const clean = await runSeed(seed, only);
    expect(clean.findings, failureReport(clean)).toEqual([]);
  });
});
