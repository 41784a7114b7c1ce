/**
 * CLI side of snowflake: `sequoia gen snowflake` (leases a worker id from the
 * store for the run, like a server, and gives it back), `sequoia explain ID
 * --layout L` for snowflake layouts, and `sequoia plan`.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../core/errors.js';
import { MAX_COUNT, parseShard } from '../core/request-rules.js';
import { explainId } from '../core/snowflake/explain.js';
import { type Layout, PRESETS, defineLayouts, getLayout, lifetimeYears } from '../core/snowflake/layout.js';
import { plan } from '../core/snowflake/planner.js';
import { type ChangeCheck, checkChange, parseCutover } from '../core/snowflake/lineage.js';

export const SNOWFLAKE_LAYOUTS = [...PRESETS.keys()];

/** The custom layouts of the config file (`--config` or SEQUOIA_CONFIG) and SEQUOIA_LAYOUTS. */
export async function configuredLayouts(configFile: string | undefined): Promise<Map<string, Layout>> {
  // The config schema loads only here: `sequoia gen uuid` starts without it.
  const { resolveConfig } = await import('../app/config.js');
  return defineLayouts(resolveConfig({}, process.env, configFile).layouts);
}

export function isSnowflakeLayout(name: string | undefined, custom?: ReadonlyMap<string, Layout>): boolean {
  return name !== undefined && (PRESETS.has(name) || custom?.has(name) === true);
}

export interface GenSnowflakeOptions {
  readonly count: number;
  readonly layout?: string | undefined;
  readonly shard?: string | undefined;
  readonly store?: string | undefined;
  readonly workerIdProvider?: string | undefined;
  readonly config?: string | undefined;
}

export async function genSnowflake(o: GenSnowflakeOptions): Promise<string[]> {
  const [{ resolveConfig }, { withSnowflakeService }, { parseWorkerIdProvider }] = await Promise.all([
    import('../app/config.js'),
    import('../app/wiring.js'),
    import('../app/worker-id-provider-spec.js'),
  ]);
  const config = resolveConfig({ store: o.store, workerIdProvider: o.workerIdProvider, snowflakeLayout: o.layout }, process.env, o.config);
  if (parseWorkerIdProvider(config.workerIdProvider).kind === 'worker-node') {
    // worker-node takes a new id for good at every start: one per `gen` call would use up the layout's ids.
    throw new InvalidArgumentError(
      "gen snowflake cannot use worker id provider worker-node: it takes a new worker id for good on every call and would use up the layout's ids; use --worker-id-provider lease (the id is given back after the run) or static:N",
    );
  }
  const layouts = defineLayouts(config.layouts);
  const layout = getLayout(config.snowflakeLayout, layouts);
  if (layout.shardBits > 0 && o.shard === undefined) {
    throw new InvalidArgumentError(`layout ${layout.name} needs --shard from 0 to ${2 ** layout.shardBits - 1}`);
  }
  const shard = parseShard(layout, { shard: o.shard });
  // Ctrl-C while a large --count runs: stop between batches, give the worker id back
  // (close() releases the lease), say so, and exit 130. A second Ctrl-C exits at once.
  let interrupted = false;
  const onSigint = (): void => {
    if (interrupted) process.exit(130);
    interrupted = true;
  };
  process.on('SIGINT', onSigint);
  let out: string[];
  try {
    out = await withSnowflakeService({ ...config, snowflakeLayout: layout.name }, async (service) => {
      const ids: string[] = [];
      while (ids.length < o.count && !interrupted)
        ids.push(...(await service.nextMany(layout.name, Math.min(MAX_COUNT, o.count - ids.length), shard)));
      return ids;
    });
  } finally {
    process.off('SIGINT', onSigint);
  }
  if (interrupted) {
    process.stderr.write(`sequoia: interrupted after ${out.length} of ${o.count} IDs (none printed); the worker id is given back\n`);
    process.exit(130);
  }
  return out;
}

export function explainSnowflake(id: string, layout: string, custom?: ReadonlyMap<string, Layout>): Record<string, unknown> {
  return { ...explainId(id, getLayout(layout, custom)) };
}

/**
 * `sequoia plan --layout NAME`: a preset's or a configured layout's widths,
 * lifetime and warnings; for a lineage, each version's, with its cutover and first ID.
 */
export function describeLayout(layout: Layout, nowMs = Date.now()): Record<string, unknown> {
  if (layout.lineage) {
    return {
      layout: layout.name,
      lineage: layout.lineage.versions.map((v) => {
        const { warnings: _, layout: name, version: layoutVersion, ...d } = describeLayout(v.layout, nowMs);
        return {
          version: v.version,
          layout: name,
          layoutVersion,
          from: v.fromMs === undefined ? null : new Date(v.fromMs).toISOString(),
          firstId: v.firstId.toString(),
          ...d,
        };
      }),
      warnings: layout.warnings,
    };
  }
  return {
    layout: layout.name,
    version: layout.version,
    epoch: new Date(layout.epochMs).toISOString(),
    epochMs: layout.epochMs,
    unitMs: layout.unitMs,
    timeBits: layout.timeBits,
    fields: layout.fields.map((f) => ({ ...f })),
    sequenceStart: layout.sequenceStart,
    workers: 2 ** layout.workerBits,
    sequencePerTick: 2 ** layout.sequenceBits,
    lifetimeYears: Math.round(lifetimeYears(layout) * 10) / 10,
    endsAt: new Date(layout.endsAtMs).toISOString(),
    remainingYears: Math.round(((layout.endsAtMs - nowMs) / (365.25 * 86_400_000)) * 10) / 10,
    warnings: layout.warnings,
  };
}

/**
 * `sequoia plan --layout CURRENT --next NEW --from TIME`: the proposed next
 * version checked against the current one (a lineage's last version). An
 * unsafe change is printed, then refused (exit 2) with its reasons.
 */
export function planChange(current: Layout, next: Layout, from: string): ChangeCheck {
  const cutoverMs = parseCutover(from, '--from');
  let cur = current;
  if (current.lineage) {
    const last = current.lineage.versions[current.lineage.versions.length - 1];
    if (last?.fromMs !== undefined && cutoverMs <= last.fromMs) {
      throw new InvalidArgumentError(`--from must be after ${current.name}'s last cutover (${new Date(last.fromMs).toISOString()})`);
    }
    cur = last?.layout ?? current;
  }
  if (next.lineage) throw new InvalidArgumentError(`--next must name a layout, not the lineage ${next.name}`);
  return checkChange(cur, next, cutoverMs);
}

function printChange(c: ChangeCheck): void {
  const row = (label: string, value: string): void => console.log(`${label.padEnd(15)}${value}`);
  const cap = (v: ChangeCheck['current']) =>
    `${v.layout}: ${v.workers} workers, ${v.idsPerMsPerWorker} IDs per ms each, runs out ${v.endsAt}`;
  row('current', cap(c.current));
  row('next', cap(c.next));
  row('cutover', c.cutover);
  row('largest before', c.currentMaxId);
  row('first after', c.nextFirstId ?? '(none)');
  row('safe', c.safe ? `yes: every ID of ${c.next.layout} is above every ID ${c.current.layout} issues before the cutover` : 'no');
  for (const p of c.problems) console.log(`unsafe: ${p}`);
  for (const w of c.warnings) console.log(`warning: ${w}`);
  for (const b of c.breaks) console.log(`breaks past 2^63: ${b}`);
}

/** The numeric options ([value, flag] each), read as positive numbers; one message per bad value, all of them at once. */
function numbers<K extends string>(given: Record<K, [string | undefined, string]>): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = {};
  const bad: string[] = [];
  for (const key of Object.keys(given) as K[]) {
    const [v, flag] = given[key];
    if (v === undefined) continue;
    if (/^[0-9]+(\.[0-9]+)?$/.test(v) && Number(v) > 0) out[key] = Number(v);
    else bad.push(`${flag} must be a positive number, got ${JSON.stringify(v)}`);
  }
  if (bad.length > 0) throw new InvalidArgumentError(bad.join('\n'));
  return out;
}

/** `plan --layout NAME` as text: one labelled row per width, then its warnings; a lineage: one row per version. */
function printLayout(d: ReturnType<typeof describeLayout>): void {
  const versions = d.lineage as (Record<string, unknown> & { version: number; from: string | null })[] | undefined;
  if (versions) {
    const row = (label: string, value: string): void => console.log(`${label.padEnd(15)}${value}`);
    row('lineage', `${String(d.layout)}: ${versions.length} version${versions.length === 1 ? '' : 's'}`);
    for (const v of versions) {
      row(
        `version ${v.version}`,
        `${String(v.layout)} from ${v.from ?? 'its epoch'}: ${String(v.workers)} workers, ${String(v.sequencePerTick)} IDs per ${v.unitMs === 1 ? '' : `${String(v.unitMs)} `}ms each, runs out ${String(v.endsAt)}`,
      );
      if (v.from !== null) row('', `first ID ${String(v.firstId)}`);
    }
    for (const w of d.warnings as string[]) console.log(`warning: ${w}`);
    return;
  }
  const fields = d.fields as { name: string; bits: number; role: string }[];
  // One column for every label, however long a field's name (`datacenter bits` is 15 characters).
  const width = Math.max(15, ...fields.map((f) => `${f.name} bits`.length + 1));
  const row = (label: string, value: string): void => console.log(`${label.padEnd(width)}${value}`);
  row('layout', `${String(d.layout)} (version ${String(d.version)})`);
  row('epoch', `${String(d.epoch)}, ticks of ${String(d.unitMs)} ms`);
  row('time bits', String(d.timeBits));
  for (const f of fields) row(`${f.name} bits`, `${f.bits}  (${f.role})`);
  const start = d.sequenceStart as Layout['sequenceStart'];
  row('sequence start', start.kind === 'random' ? `random 0-${start.max} each tick` : '0 each tick');
  row('lifetime', `${String(d.lifetimeYears)} years: ends ${String(d.endsAt)}`);
  for (const w of d.warnings as string[]) console.log(`warning: ${w}`);
}

export function registerPlan(program: Command): void {
  program
    .command('plan')
    .description('size a snowflake layout: bit widths, lifetime, 53-bit and signed-64 warnings')
    .option('--nodes <n>', 'most issuing nodes active at once')
    .option('--peak-per-ms <n>', 'peak IDs per node per millisecond')
    .option('--years <n>', 'years the format must last')
    .option('--unit-ms <n>', 'milliseconds per tick (default 1)')
    .option('--layout <name>', 'instead: show a preset, configured layout or lineage (widths, lifetime, warnings)')
    .option('--next <layout>', 'with --layout and --from: check a proposed next version of it (safe or refused, exit 2)')
    .option('--from <time>', 'with --next: the cutover, ISO 8601 with its zone (e.g. 2027-01-01T00:00:00Z)')
    .option('--config <file>', 'JSON config file with `layouts` (env SEQUOIA_CONFIG)')
    .option('--json', 'print JSON')
    .action(runPlan);
}

interface PlanOptions {
  nodes?: string;
  peakPerMs?: string;
  years?: string;
  unitMs?: string;
  layout?: string;
  next?: string;
  from?: string;
  config?: string;
  json?: boolean;
}

async function runPlan(given: PlanOptions): Promise<void> {
  const o = {
    layout: given.layout,
    config: given.config,
    json: given.json,
    ...numbers({
      nodes: [given.nodes, '--nodes'],
      peakPerMs: [given.peakPerMs, '--peak-per-ms'],
      years: [given.years, '--years'],
      unitMs: [given.unitMs, '--unit-ms'],
    }),
  };
  if (o.layout !== undefined) {
    if (o.nodes !== undefined || o.peakPerMs !== undefined || o.years !== undefined || o.unitMs !== undefined) {
      throw new InvalidArgumentError('plan: give --layout, or --nodes, --peak-per-ms and --years, not both');
    }
    const custom = await configuredLayouts(o.config);
    if (given.next !== undefined || given.from !== undefined) {
      if (given.next === undefined || given.from === undefined) throw new InvalidArgumentError('plan: --next and --from go together');
      const c = planChange(getLayout(o.layout, custom), getLayout(given.next, custom), given.from);
      if (o.json) console.log(JSON.stringify(c, null, 2));
      else printChange(c);
      if (!c.safe) throw new InvalidArgumentError(`unsafe change: ${c.problems.join('; ')}`);
      return;
    }
    const d = describeLayout(getLayout(o.layout, custom));
    if (o.json) console.log(JSON.stringify(d, null, 2));
    else printLayout(d);
    return;
  }
  if (given.next !== undefined || given.from !== undefined)
    throw new InvalidArgumentError('plan: --next and --from need --layout (the current version)');
  if (o.nodes === undefined || o.peakPerMs === undefined || o.years === undefined) {
    throw new InvalidArgumentError('plan needs --nodes, --peak-per-ms and --years (or --layout NAME)');
  }
  const p = plan({ nodes: o.nodes, peakPerMs: o.peakPerMs, years: o.years, unitMs: o.unitMs });
  if (o.json) {
    console.log(JSON.stringify(p, null, 2));
    return;
  }
  printPlan(p);
}

function printPlan(p: ReturnType<typeof plan>): void {
  console.log(`node bits      ${p.nodeBits}  (${p.workers} nodes)`);
  console.log(`sequence bits  ${p.sequenceBits}  (${p.sequencePerTick} per ${p.unitMs} ms)`);
  console.log(`time bits      ${p.timeBits}  (${p.lifetimeYears.toFixed(1)} years of ${p.unitMs} ms ticks)`);
  console.log(
    `total          ${p.totalBits} bits with the sign bit; ${p.spareBits >= 0 ? `${p.spareBits} spare (all on time: ${p.lifetimeYearsWithSpare.toFixed(1)} years)` : 'does not fit'}`,
  );
  for (const w of p.warnings) console.log(`warning: ${w}`);
}
