/** How a failing seed is told: enough to see what happened and to replay it. */
import type { SeedResult } from './run.js';

/** The replay command of a seed, as a report prints it. */
export function replayCommand(seed: number, plant: string | undefined, world?: string): string {
  const w = world === 'snowflake' && plant === undefined ? ' --world snowflake' : '';
  return `npm run sim -- --seed ${seed}${w}${plant === undefined ? '' : ` --plant ${plant}`}`;
}

/** A failing seed's report: seed, findings, the events that led there, the command that replays it. */
export function failureReport(r: SeedResult): string {
  return [
    `FAILED seed ${r.seed}${r.plant === undefined ? '' : ` (plant ${r.plant})`}: trace ${r.hash.slice(0, 16)}`,
    ...r.findings.map((f) => `  ${f.kind} at ${f.at.toFixed(0)} ms: ${f.message}`),
    '  trace (faults and operator actions; the last 30 lines):',
    ...r.shortTrace.map((l) => `    ${l}`),
    `  replay: ${replayCommand(r.seed, r.plant, r.world)}`,
  ].join('\n');
}
