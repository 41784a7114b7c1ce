/**
 * CLI side of snowflake: `sequoia gen snowflake` (leases a worker id from the
 * store for the run, like a server, and gives it back), `sequoia explain ID
 * --layout L` for snowflake layouts, and `sequoia plan`.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../core/errors.js';
import { MAX_COUNT } from '../core/request-rules.js';
import { PRESETS, getLayout } from '../core/snowflake/layout.js';

export const SNOWFLAKE_LAYOUTS = [...PRESETS.keys()];

export function isSnowflakeLayout(name: string | undefined): boolean {
  return name !== undefined && PRESETS.has(name);
}

export interface GenSnowflakeOptions {
  readonly count: number;
  readonly layout?: string | undefined;
  readonly shard?: string | undefined;
  readonly store?: string | undefined;
  readonly workerIdProvider?: string | undefined;
}

export async function genSnowflake(o: GenSnowflakeOptions): Promise<string[]> {
  const { resolveConfig } = await import('../app/config.js');
  const config = resolveConfig({ store: o.store, workerIdProvider: o.workerIdProvider, snowflakeLayout: o.layout }, process.env, undefined);
  const layout = getLayout(config.snowflakeLayout);
  let shard = 0;
  if (layout.shardBits > 0) {
    if (o.shard === undefined || !/^[0-9]{1,9}$/.test(o.shard) || Number(o.shard) >= 2 ** layout.shardBits) {
      throw new InvalidArgumentError(`layout ${layout.name} needs --shard from 0 to ${2 ** layout.shardBits - 1}`);
    }
    shard = Number(o.shard);
  } else if (o.shard !== undefined) throw new InvalidArgumentError(`layout ${layout.name} has no shard field`);
  const { withSnowflakeService } = await import('../app/wiring.js');
  return withSnowflakeService({ ...config, snowflakeLayout: layout.name }, async (service) => {
    const out: string[] = [];
    while (out.length < o.count) out.push(...(await service.nextMany(layout.name, Math.min(MAX_COUNT, o.count - out.length), shard)));
    return out;
  });
}

export async function explainSnowflake(id: string, layout: string): Promise<Record<string, unknown>> {
  const { explainId } = await import('../core/snowflake/explain.js');
  return { ...explainId(id, getLayout(layout)) };
}

function num(name: string) {
  return (v: string): number => {
    if (!/^[0-9]+(\.[0-9]+)?$/.test(v)) throw new InvalidArgumentError(`${name} must be a positive number, got ${JSON.stringify(v)}`);
    return Number(v);
  };
}

export function registerPlan(program: Command): void {
  program
    .command('plan')
    .description('size a snowflake layout: bit widths, lifetime, 53-bit and signed-64 warnings')
    .requiredOption('--nodes <n>', 'most issuing nodes active at once', num('--nodes'))
    .requiredOption('--peak-per-ms <n>', 'peak IDs per node per millisecond', num('--peak-per-ms'))
    .requiredOption('--years <n>', 'years the format must last', num('--years'))
    .option('--unit-ms <n>', 'milliseconds per tick (default 1)', num('--unit-ms'))
    .option('--json', 'print JSON')
    .action(async (o: { nodes: number; peakPerMs: number; years: number; unitMs?: number; json?: boolean }) => {
      const { plan } = await import('../core/snowflake/planner.js');
      const p = plan({ nodes: o.nodes, peakPerMs: o.peakPerMs, years: o.years, unitMs: o.unitMs });
      if (o.json) {
        console.log(JSON.stringify(p, null, 2));
        return;
      }
      console.log(`node bits      ${p.nodeBits}  (${p.workers} nodes)`);
      console.log(`sequence bits  ${p.sequenceBits}  (${p.sequencePerTick} per ${p.unitMs} ms)`);
      console.log(`time bits      ${p.timeBits}  (${p.lifetimeYears.toFixed(1)} years of ${p.unitMs} ms ticks)`);
      console.log(`total          ${p.totalBits} bits with the sign bit; ${p.spareBits >= 0 ? `${p.spareBits} spare (all on time: ${p.lifetimeYearsWithSpare.toFixed(1)} years)` : 'does not fit'}`);
      for (const w of p.warnings) console.log(`warning: ${w}`);
    });
}
