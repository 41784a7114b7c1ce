/**
 * `npm run sim`: runs seeds of the simulator and reports. Options:
 * `--seed N` (one seed; `--trace FILE` writes its whole trace), `--seeds N`
 * (how many, from `--first`, default 1), `--minutes M` (as many seeds as
 * fit), `--plant NAME` (a planted bug on), `--hunt NAME` (the first seed
 * that finds a planted bug), `--chaos-s S` (simulated seconds of faults per seed),
 * `--bench` (speed only: seeds from 101, findings not counted as failures),
 * `--world segment|snowflake|both` (which simulated cluster; default both for
 * a run of seeds, segment for `--seed N`; a snowflake plant implies snowflake).
 * Default: a fixed set of seeds within about a minute. Exit 0 clean, 1 a
 * finding (or a fault kind or operator action that never fired), 2 bad arguments.
 * Speed is reported per CPU second too (process.cpuUsage): the machine is shared.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ACTIONS, SEQUENCES } from './model/cluster.js';
import { SF_COVERAGE } from './model/snowflake-world.js';
import { PLANTS } from './plants.js';
import { hunt } from './hunt.js';
import { failureReport } from './report.js';
import { runSeed } from './run.js';

export const DEFAULT_SEEDS = 40;
const DEFAULT_BUDGET_MS = 60_000;

function usage(message: string): never {
  process.stderr.write(
    `sim: ${message}\nusage: npm run sim -- [--seed N | --seeds N [--first N] | --minutes M] [--world segment|snowflake|both] [--plant ${Object.keys(PLANTS).join('|')}]\n`,
  );
  process.exit(2);
}

function int(name: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) usage(`--${name} must be an integer of at least ${min}`);
  return n;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        seed: { type: 'string' },
        seeds: { type: 'string' },
        first: { type: 'string' },
        minutes: { type: 'string' },
        plant: { type: 'string' },
        'chaos-s': { type: 'string' },
        trace: { type: 'string' },
        hunt: { type: 'string' },
        bench: { type: 'boolean' },
        world: { type: 'string' },
      },
      strict: true,
    });
  } catch (e) {
    usage((e as Error).message);
  }
  const v = parsed.values;
  const plant = v.plant;
  if (plant !== undefined && !PLANTS[plant]) usage(`--plant must be one of ${Object.keys(PLANTS).join(', ')}`);
  const chaosS = int('chaos-s', v['chaos-s'], 1);
  if (v.world !== undefined && !['segment', 'snowflake', 'both'].includes(v.world)) usage('--world must be segment, snowflake or both');
  const plantWorld = plant === undefined ? undefined : PLANTS[plant]?.world === 'snowflake' ? 'snowflake' : 'segment';
  const worlds: Array<'segment' | 'snowflake'> =
    plantWorld !== undefined
      ? [plantWorld]
      : v.world === 'both' || v.world === undefined
        ? ['segment', 'snowflake']
        : [v.world as 'segment'];
  const opts = { plant, ...(chaosS === undefined ? {} : { chaosMs: chaosS * 1000 }) };
  if (v.hunt !== undefined) {
    if (!PLANTS[v.hunt]) usage(`--hunt must be one of ${Object.keys(PLANTS).join(', ')}`);
    const h = await hunt(v.hunt, int('seeds', v.seeds, 1) ?? 100, opts);
    if (h.found)
      process.stdout.write(
        `${failureReport(h.found)}\nfound by seed ${h.found.seed} (${h.seedsRun} seeds run; the same seed without the plant is clean)\n`,
      );
    else {
      process.stdout.write(`plant ${v.hunt}: not found in ${h.seedsRun} seeds\n`);
      process.exitCode = 1;
    }
    return;
  }
  const one = int('seed', v.seed, 0);
  if (one !== undefined) {
    const r = await runSeed(one, { ...opts, world: worlds.length === 1 ? worlds[0] : 'segment' });
    if (v.trace !== undefined) writeFileSync(v.trace, `${r.trace.join('\n')}\n`);
    process.stdout.write(
      `seed ${one}: ${r.events} events, ${(r.simMs / 1000).toFixed(0)} simulated s, ${r.answered} IDs, ${r.faults} faults; trace sha256 ${r.hash}\n`,
    );
    if (r.findings.length > 0) {
      process.stdout.write(`${failureReport(r)}\n`);
      process.exitCode = 1;
    }
    return;
  }
  const bench = v.bench === true;
  const first = int('first', v.first, 0) ?? (bench ? 101 : 1);
  const minutes = int('minutes', v.minutes, 1);
  const count = int('seeds', v.seeds, 1) ?? (minutes === undefined ? DEFAULT_SEEDS : Number.MAX_SAFE_INTEGER);
  // --seeds N runs them all; the default set stops at about a minute.
  const budget = minutes !== undefined ? minutes * 60_000 : v.seeds !== undefined ? Number.POSITIVE_INFINITY : DEFAULT_BUDGET_MS;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const coverage = new Map<string, number>(
    [...(worlds.includes('segment') ? [...ACTIONS, ...SEQUENCES] : []), ...(worlds.includes('snowflake') ? SF_COVERAGE : [])].map((a) => [
      a,
      0,
    ]),
  );
  let simMs = 0;
  let ids = 0;
  let faults = 0;
  let n = 0;
  let failed = 0;
  let events = 0;
  let fired = 0;
  for (let seed = first; n < count && performance.now() - t0 < budget; seed++, n++) {
    for (const world of worlds) {
      const r = await runSeed(seed, { ...opts, world });
      simMs += r.simMs;
      ids += r.answered;
      faults += r.faults;
      events += r.events;
      for (const [k, c] of r.coverage) {
        coverage.set(k, (coverage.get(k) ?? 0) + c);
        fired += c;
      }
      if (r.findings.length > 0) {
        failed++;
        if (!bench) process.stdout.write(`${failureReport(r)}\n`);
      }
    }
  }
  const wall = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu0);
  const cpu = (used.user + used.system) / 1e6;
  process.stdout.write(
    [
      `seeds run: ${n} (from ${first}; worlds ${worlds.join(', ')}), failed: ${failed}${plant === undefined ? '' : `, plant ${plant}`}`,
      `simulated: ${(simMs / 1000).toFixed(0)} s in ${wall.toFixed(1)} s wall: ${(simMs / 1000 / wall).toFixed(0)} simulated s per real s, ${((n / wall) * 60).toFixed(0)} seeds a minute`,
      `CPU: ${cpu.toFixed(1)} s (user + system): ${(simMs / 1000 / cpu).toFixed(0)} simulated s per CPU s, ${((n / cpu) * 60).toFixed(0)} seeds per CPU minute`,
      `per seed: ${(simMs / 1000 / n).toFixed(1)} simulated s, ${(faults / n).toFixed(1)} fault draws (${(fired / n).toFixed(1)} faults and operator actions fired), ${(events / n).toFixed(0)} events, ${(ids / n).toFixed(0)} IDs`,
      `IDs answered: ${ids}; fault draws: ${faults}`,
      'coverage (times fired):',
      ...[...coverage].map(([k, c]) => `  ${k.padEnd(22)} ${c}${c === 0 ? '  <- never fired' : ''}`),
      '',
    ].join('\n'),
  );
  if (bench) return;
  if (failed > 0 || [...coverage.values()].some((c) => c === 0)) process.exitCode = 1;
}

await main();
