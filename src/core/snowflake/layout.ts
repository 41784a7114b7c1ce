/**
 * Snowflake bit layouts as versioned, named data.
 *
 *   bit 63        62 ...                                  ... 0
 *   [sign = 0][ time: ticks of `unitMs` since `epochMs` ][ fields, high to low ]
 *
 * `fields` lists every field below the time, high to low: node fields (worker,
 * datacenter, machine, region: fixed per generator; or `shard`: chosen per
 * request, as Instagram's logical shard) and exactly one `sequence` field.
 * Sonyflake puts its sequence above the machine id, so order is data too.
 *
 * A layout is a long-term protocol: once IDs are stored, its epoch and widths
 * must never change. Changing either is a new layout (new name or version);
 * never mix layouts in one column.
 *
 * Time bits plus field bits are 63. Three presets (instagram, customuuid,
 * simpleflake) use 64 as published; Sequoia never sets the sign bit, so their
 * lifetime ends when the time field would reach it (`maxTick`), and after that
 * the generator refuses with ID_SPACE_EXHAUSTED. It never wraps or goes negative.
 */
import { systemClock } from '../clock.js';
import { InvalidArgumentError, UnavailableError } from '../errors.js';
import { LAYOUT_NAME } from '../request-rules.js';
import { type Lineage, type LineageStep, defineLineage, parseCutover, versionOf } from './lineage.js';

export type FieldRole = 'node' | 'shard' | 'sequence';

export interface LayoutField {
  readonly name: string;
  readonly bits: number;
  readonly role: FieldRole;
}

/** How the sequence starts in each new tick. `random`: uniformly in [0, max]. */
export type SequenceStart = { readonly kind: 'zero' } | { readonly kind: 'random'; readonly max: number };

export interface LayoutSpec {
  readonly name: string;
  readonly version: number;
  readonly description?: string;
  /** Unix ms of tick 0. */
  readonly epochMs: number;
  /** Milliseconds per tick (1 for most; 10 for sonyflake; 1000 for uid-generator). */
  readonly unitMs: number;
  readonly timeBits: number;
  /** Fields below the time, high to low. Exactly one has role `sequence`. */
  readonly fields: readonly LayoutField[];
  readonly sequenceStart?: SequenceStart;
}

/** A validated layout with everything the generator and `explain` derive from it. */
export interface Layout extends LayoutSpec {
  readonly sequenceStart: SequenceStart;
  /** Bits below the time field (fields summed). */
  readonly lowBits: number;
  /** Largest tick that keeps the ID within 2^63-1 and within the time field. */
  readonly maxTick: number;
  /** Bits of the fields with role `node` together: the worker-id space is [0, 2^workerBits). */
  readonly workerBits: number;
  readonly shardBits: number;
  readonly sequenceBits: number;
  /** 2^(shift of the sequence field). */
  readonly sequenceMul: number;
  /** For each field: 2^shift (its place value) and its max value. */
  readonly placeValues: readonly number[];
  /** Unix ms after which no tick is left: `epochMs + (maxTick + 1) * unitMs`. */
  readonly endsAtMs: number;
  /** The id space key: layouts with the same key are the same numbers (leases are per key). */
  readonly spaceKey: string;
  readonly warnings: readonly string[];
  /**
   * Set on a lineage (a layout name whose layout changes at cutovers): its
   * versions. The other fields are then its last version's; generators and
   * decoders use the version's own layout (see lineage.ts).
   */
  readonly lineage?: Lineage;
}

const MAX_TICK_SIGNED = (lowBits: number) => 2 ** (63 - lowBits) - 1;
export const TWITTER_EPOCH_MS = 1288834974657; // 2010-11-04T01:42:54.657Z
export const UID_GENERATOR_EPOCH_MS = 1463673600000; // 2016-05-19T16:00:00Z = 2016-05-20 00:00 +08:00
const YEAR_MS = 365.25 * 86_400_000;
/** A layout with fewer years left gets a warning (as `sequoia plan` sizes for years of use). */
const LIFETIME_WARNING_YEARS = 10;

function f(name: string, bits: number, role: FieldRole = 'node'): LayoutField {
  return { name, bits, role };
}

/** The presets, as published by each scheme (DESIGN.md "Snowflake family"). */
export const PRESET_SPECS: readonly LayoutSpec[] = [
  {
    name: 'twitter',
    version: 1,
    description: "Twitter's Snowflake: 41 bits of ms, 5 datacenter, 5 worker, 12 sequence",
    epochMs: TWITTER_EPOCH_MS,
    unitMs: 1,
    timeBits: 41,
    fields: [f('datacenter', 5), f('worker', 5), f('sequence', 12, 'sequence')],
  },
  {
    name: 'leaf',
    version: 1,
    description: "Meituan Leaf's snowflake mode: 41 bits of ms, 10 worker, 12 sequence starting at a random 0-99 each ms",
    epochMs: TWITTER_EPOCH_MS,
    unitMs: 1,
    timeBits: 41,
    fields: [f('worker', 10), f('sequence', 12, 'sequence')],
    // As Leaf's SnowflakeIDGenImpl (RANDOM.nextInt(100) at each new ms): with one ID
    // per ms a zero start would make every ID even, so `id % N` sharding would fill one shard.
    sequenceStart: { kind: 'random', max: 99 },
  },
  {
    name: 'sonyflake',
    version: 1,
    description: 'Sonyflake: 39 bits of 10 ms since 2014-09-01, 8 sequence, 16 machine',
    epochMs: Date.UTC(2014, 8, 1),
    unitMs: 10,
    timeBits: 39,
    fields: [f('sequence', 8, 'sequence'), f('machine', 16)],
  },
  {
    name: 'uid-generator',
    version: 1,
    description:
      "Baidu uid-generator's default: 28 bits of seconds since 2016-05-20 00:00 Shanghai time, 22 worker, 13 sequence (ran out on 2024-11-20)",
    // DefaultUidGenerator parses its epochStr "2016-05-20" in the JVM's zone (Asia/Shanghai): 1463673600000.
    epochMs: UID_GENERATOR_EPOCH_MS,
    unitMs: 1000,
    timeBits: 28,
    fields: [f('worker', 22), f('sequence', 13, 'sequence')],
  },
  {
    name: 'instagram',
    version: 1,
    description: "Instagram's sharded IDs: 41 bits of ms since 2011-08-24, 13 logical shard (per request), 10 sequence per shard",
    epochMs: 1314220021721,
    unitMs: 1,
    timeBits: 41,
    fields: [f('shard', 13, 'shard'), f('sequence', 10, 'sequence')],
  },
  {
    name: 'customuuid',
    version: 1,
    description: 'CustomUUID: 41 bits of ms, 3 region, 10 worker, 10 sequence starting at a random 0-9 each ms',
    epochMs: TWITTER_EPOCH_MS,
    unitMs: 1,
    timeBits: 41,
    fields: [f('region', 3), f('worker', 10), f('sequence', 10, 'sequence')],
    sequenceStart: { kind: 'random', max: 9 },
  },
  {
    name: 'simpleflake',
    version: 1,
    description:
      'Simpleflake: 41 bits of ms since 2000-01-01T05:00Z, 23 random bits (here a sequence with a random start, so one issuer never repeats)',
    epochMs: 946702800000,
    unitMs: 1,
    timeBits: 41,
    fields: [f('sequence', 23, 'sequence')],
    sequenceStart: { kind: 'random', max: 2 ** 23 - 1 },
  },
];

export interface ValidateOptions {
  /** Refuse layouts whose lifetime from now is shorter. Default 0 (presets); config layouts use 10. */
  readonly minLifetimeYears?: number;
  /** Now, Unix ms (for "epoch in the past" and the lifetime). */
  readonly nowMs?: number;
}

/**
 * Validates a layout spec and derives the generator's constants. Throws
 * InvalidArgumentError naming every problem.
 *
 * @example
 * const l = defineLayout({ name: 'orders', version: 1, epochMs: Date.UTC(2024, 0, 1), unitMs: 1, timeBits: 41,
 *   fields: [{ name: 'worker', bits: 10, role: 'node' }, { name: 'sequence', bits: 12, role: 'sequence' }] },
 *   { minLifetimeYears: 10 });
 */
export function defineLayout(spec: LayoutSpec, options: ValidateOptions = {}): Layout {
  const nowMs = options.nowMs ?? systemClock.now();
  const { fields, lowBits, total, start } = checkSpec(spec, nowMs);
  const maxTick = Math.min(2 ** spec.timeBits - 1, MAX_TICK_SIGNED(lowBits));
  const endsAtMs = spec.epochMs + (maxTick + 1) * spec.unitMs;
  const minYears = options.minLifetimeYears ?? 0;
  if (minYears > 0 && endsAtMs - nowMs < minYears * YEAR_MS) {
    throw new InvalidArgumentError(
      `layout ${JSON.stringify(spec.name)}: its time bits run out on ${new Date(endsAtMs).toISOString()}, less than ${minYears} years from now`,
    );
  }
  const placeValues: number[] = [];
  let shift = lowBits;
  let sequenceMul = 1;
  for (const fl of fields) {
    shift -= fl.bits;
    placeValues.push(2 ** shift);
    if (fl.role === 'sequence') sequenceMul = 2 ** shift;
  }
  return {
    ...spec,
    fields: fields.map((x) => ({ name: x.name, bits: x.bits, role: x.role })),
    sequenceStart: start,
    lowBits,
    maxTick,
    workerBits: fields.filter((x) => x.role === 'node').reduce((a, x) => a + x.bits, 0),
    shardBits: fields.find((x) => x.role === 'shard')?.bits ?? 0,
    sequenceBits: fields.find((x) => x.role === 'sequence')?.bits ?? 0,
    sequenceMul,
    placeValues,
    endsAtMs,
    spaceKey: `e${spec.epochMs}.u${spec.unitMs}.t${spec.timeBits}.${spaceShape(fields)}`,
    warnings: layoutWarnings(spec, { total, lowBits, maxTick, endsAtMs, nowMs }),
  };
}

const isInt = (v: unknown, lo: number, hi: number) => typeof v === 'number' && Number.isSafeInteger(v) && v >= lo && v <= hi;

/** Every problem of a spec at once, in one InvalidArgumentError; what a valid one adds up to. */
function checkSpec(
  spec: LayoutSpec,
  nowMs: number,
): { fields: readonly LayoutField[]; lowBits: number; total: number; start: SequenceStart } {
  const problems: string[] = [];
  if (typeof spec.name !== 'string' || !LAYOUT_NAME.test(spec.name)) problems.push(`name must match ${LAYOUT_NAME.source}`);
  if (!isInt(spec.version, 1, 1_000_000)) problems.push('version must be an integer from 1');
  if (!isInt(spec.unitMs, 1, 86_400_000)) problems.push('unitMs must be an integer from 1 to 86400000');
  if (!isInt(spec.timeBits, 1, 53)) problems.push('timeBits must be an integer from 1 to 53');
  if (!isInt(spec.epochMs, 0, 8.64e15)) problems.push('epochMs must be a non-negative integer (Unix ms)');
  else if (spec.epochMs > nowMs) problems.push(`epochMs must be in the past (got ${new Date(spec.epochMs).toISOString()})`);
  const fields = Array.isArray(spec.fields) ? spec.fields : [];
  if (fields.length === 0) problems.push('fields must list the fields below the time, high to low');
  const lowBits = checkFields(fields, problems);
  const total = (spec.timeBits ?? 0) + lowBits;
  if (problems.length === 0 && total !== 63 && total !== 64) {
    problems.push(`time and field widths must sum to 63 (got ${total})`);
  }
  const seqField = fields.find((x) => x.role === 'sequence');
  const start: SequenceStart = spec.sequenceStart ?? { kind: 'zero' };
  if (start.kind === 'random' && seqField && !isInt(start.max, 0, 2 ** seqField.bits - 1)) {
    problems.push(`sequenceStart.max must be an integer from 0 to ${2 ** seqField.bits - 1}`);
  }
  if (problems.length) throw new InvalidArgumentError(`layout ${JSON.stringify(spec.name)}: ${problems.join('; ')}`);
  return { fields, lowBits, total, start };
}

/** The fields' problems (pushed onto `problems`); their summed widths. */
function checkFields(fields: readonly LayoutField[], problems: string[]): number {
  const names = new Set<string>(['time', 'timestampMs', 'id', 'layout', 'lineage', 'version']);
  let lowBits = 0;
  let seqCount = 0;
  let shardCount = 0;
  for (const fl of fields) {
    if (!fl || typeof fl.name !== 'string' || !/^[a-z][a-zA-Z0-9]{0,31}$/.test(fl.name)) {
      problems.push(`field names must be lowerCamel words (got ${JSON.stringify(fl?.name)})`);
      continue;
    }
    if (names.has(fl.name)) problems.push(`field ${fl.name}: name is taken`);
    names.add(fl.name);
    if (!isInt(fl.bits, 1, 31)) problems.push(`field ${fl.name}: bits must be an integer from 1 to 31`);
    if (fl.role !== 'node' && fl.role !== 'shard' && fl.role !== 'sequence')
      problems.push(`field ${fl.name}: role must be node, shard or sequence`);
    if (fl.role === 'sequence') seqCount++;
    if (fl.role === 'shard') shardCount++;
    lowBits += fl.bits;
  }
  if (seqCount !== 1) problems.push('exactly one field must have role sequence');
  if (shardCount > 1) problems.push('at most one field may have role shard');
  return lowBits;
}

/** What a valid layout should be told about: the sign bit, its end, IDs past 2^53. */
function layoutWarnings(
  spec: LayoutSpec,
  d: { total: number; lowBits: number; maxTick: number; endsAtMs: number; nowMs: number },
): string[] {
  const warnings: string[] = [];
  const { lowBits, maxTick, endsAtMs, nowMs } = d;
  if (d.total === 64) {
    warnings.push(
      `widths sum to 64: the top time bit is the sign bit, so Sequoia stops at tick ${maxTick} (${new Date(spec.epochMs + (maxTick + 1) * spec.unitMs).toISOString()}) rather than go negative`,
    );
  }
  if (endsAtMs <= nowMs) warnings.push(`its time bits ran out on ${new Date(endsAtMs).toISOString()}: it refuses to issue`);
  else if (endsAtMs - nowMs < LIFETIME_WARNING_YEARS * YEAR_MS) {
    warnings.push(`its time bits run out on ${new Date(endsAtMs).toISOString()}, less than ${LIFETIME_WARNING_YEARS} years from now`);
  }
  if (2 ** lowBits * (maxTick + 1) > 2 ** 53) {
    const tick53 = Math.ceil(2 ** (53 - lowBits));
    const at = spec.epochMs + tick53 * spec.unitMs;
    warnings.push(
      at <= nowMs
        ? 'IDs are above 2^53: keep them as strings or bigint in JavaScript and JSON'
        : `IDs pass 2^53 on ${new Date(at).toISOString()}: keep them as strings or bigint in JavaScript and JSON`,
    );
  }
  return warnings;
}

/** The fields' shape in the space key. Adjacent node fields merge: twitter (5+5 worker bits) and leaf (10) are the same numbers, so one space. */
function spaceShape(fields: readonly LayoutField[]): string {
  const parts: [string, number][] = [];
  for (const x of fields) {
    const r = x.role === 'sequence' ? 's' : x.role === 'shard' ? 'h' : 'n';
    const prev = parts[parts.length - 1];
    if (prev && prev[0] === 'n' && r === 'n') prev[1] += x.bits;
    else parts.push([r, x.bits]);
  }
  return parts.map(([r, b]) => `${r}${b}`).join('.');
}

/**
 * A Map of the preset layouts that validates them at its first use rather than at `import('sequoia-id')` (about
 * 2 ms of it): every method fills it first, and `util.inspect` shows the filled Map.
 */
class PresetMap extends Map<string, Layout> {
  #filled = false;

  #fill(): this {
    if (!this.#filled) {
      this.#filled = true;
      for (const s of PRESET_SPECS) super.set(s.name, defineLayout(s));
    }
    return this;
  }

  override get size(): number {
    return this.#fill() && super.size;
  }
  override get(name: string): Layout | undefined {
    return this.#fill() && super.get(name);
  }
  override has(name: string): boolean {
    return this.#fill() && super.has(name);
  }
  override set(name: string, layout: Layout): this {
    return this.#fill() && super.set(name, layout);
  }
  override delete(name: string): boolean {
    return this.#fill() && super.delete(name);
  }
  override clear(): void {
    this.#filled = true;
    super.clear();
  }
  override forEach(fn: (layout: Layout, name: string, map: Map<string, Layout>) => void, thisArg?: unknown): void {
    this.#fill();
    super.forEach(fn, thisArg);
  }
  override keys(): MapIterator<string> {
    return this.#fill() && super.keys();
  }
  override values(): MapIterator<Layout> {
    return this.#fill() && super.values();
  }
  override entries(): MapIterator<[string, Layout]> {
    return this.#fill() && super.entries();
  }
  override [Symbol.iterator](): MapIterator<[string, Layout]> {
    return this.entries();
  }
  [Symbol.for('nodejs.util.inspect.custom')](): Map<string, Layout> {
    return new Map(this.#fill());
  }
}

/** The preset layouts by name, validated once (at the first use). */
export const PRESETS: ReadonlyMap<string, Layout> = new PresetMap();

export const DEFAULT_LAYOUT = 'twitter';

/** A preset (or a layout from `extra`) by name; INVALID_ARGUMENT naming the known ones otherwise. */
export function getLayout(name: string, extra?: ReadonlyMap<string, Layout>): Layout {
  const l = extra?.get(name) ?? PRESETS.get(name);
  if (!l) {
    const known = [...PRESETS.keys(), ...(extra ? [...extra.keys()] : [])];
    throw new InvalidArgumentError(`layout must be one of ${known.join(', ')} (got ${JSON.stringify(name)})`);
  }
  return l;
}

const SPEC_KEYS = new Set(['name', 'version', 'description', 'epochMs', 'unitMs', 'timeBits', 'fields', 'sequenceStart']);

/**
 * Custom layouts as configured (`{"discord": {"epochMs": 1420070400000, "timeBits": 42, "fields": […]}}`):
 * the key is the name; `version` and `unitMs` default to 1. Each is validated
 * by `defineLayout` like a preset, may not take a preset's name, and must
 * still have ticks left. Throws one InvalidArgumentError naming every problem.
 */
export function defineLayouts(specs: unknown, options: ValidateOptions = {}): Map<string, Layout> {
  const out = new Map<string, Layout>();
  if (specs === undefined) return out;
  if (specs === null || typeof specs !== 'object' || Array.isArray(specs)) {
    throw new InvalidArgumentError('layouts must be a JSON object of name → layout');
  }
  const nowMs = options.nowMs ?? systemClock.now();
  const problems: string[] = [];
  const lineages: [string, unknown][] = [];
  for (const [name, raw] of Object.entries(specs as Record<string, unknown>)) {
    if (raw !== null && typeof raw === 'object' && !Array.isArray(raw) && Object.hasOwn(raw, 'lineage')) {
      // Lineages name layouts: read once every layout is known.
      lineages.push([name, raw]);
      continue;
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push(`layout ${JSON.stringify(name)}: must be an object with epochMs, timeBits and fields`);
      continue;
    }
    const spec = raw as Record<string, unknown>;
    const unknown = Object.keys(spec).filter((k) => !SPEC_KEYS.has(k));
    if (unknown.length)
      problems.push(`layout ${JSON.stringify(name)}: unknown field ${unknown.join(', ')}; known: ${[...SPEC_KEYS].join(', ')}`);
    if (spec.name !== undefined && spec.name !== name)
      problems.push(`layout ${JSON.stringify(name)}: name ${JSON.stringify(spec.name)} differs from its key`);
    if (PRESETS.has(name)) problems.push(`layout ${JSON.stringify(name)}: a preset has this name; choose another`);
    try {
      const l = defineLayout({ version: 1, unitMs: 1, ...spec, name } as unknown as LayoutSpec, { ...options, nowMs });
      if (l.endsAtMs <= nowMs)
        problems.push(`layout ${JSON.stringify(name)}: its time bits ran out on ${new Date(l.endsAtMs).toISOString()}`);
      out.set(name, l);
    } catch (e) {
      problems.push(e instanceof Error ? e.message : String(e));
    }
  }
  for (const [name, raw] of lineages) {
    try {
      out.set(name, lineageLayout(name, raw as Record<string, unknown>, out));
    } catch (e) {
      problems.push(e instanceof Error ? e.message : String(e));
    }
  }
  if (problems.length) throw new InvalidArgumentError(problems.join('; '));
  return out;
}

/**
 * A lineage entry of `layouts`: `{"lineage": [{"layout": "twitter"}, {"layout": "orders-2027", "from": "2027-01-01T00:00:00Z"}]}`.
 * Its layout fields are its last version's; `lineage` holds the versions.
 */
function lineageLayout(name: string, raw: Record<string, unknown>, custom: ReadonlyMap<string, Layout>): Layout {
  const at = `layout ${JSON.stringify(name)}`;
  const unknown = Object.keys(raw).filter((k) => k !== 'lineage' && k !== 'description');
  if (unknown.length) throw new InvalidArgumentError(`${at}: unknown field ${unknown.join(', ')}; a lineage has lineage and description`);
  if (PRESETS.has(name)) throw new InvalidArgumentError(`${at}: a preset has this name; choose another`);
  if (!LAYOUT_NAME.test(name)) throw new InvalidArgumentError(`${at}: name must match ${LAYOUT_NAME.source}`);
  const list = raw.lineage;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidArgumentError(`${at}: lineage must be a list of {"layout": NAME, "from": TIME} (no "from" on the first)`);
  }
  const steps: LineageStep[] = list.map((item: unknown, i): LineageStep => {
    const field = `${at}: lineage[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      throw new InvalidArgumentError(`${field} must be {"layout": NAME, "from": TIME}`);
    const step = item as Record<string, unknown>;
    const extra = Object.keys(step).filter((k) => k !== 'layout' && k !== 'from');
    if (extra.length) throw new InvalidArgumentError(`${field}: unknown field ${extra.join(', ')}; known: layout, from`);
    const ref = step.layout;
    const layout = typeof ref === 'string' ? (custom.get(ref) ?? PRESETS.get(ref)) : undefined;
    if (!layout || layout.lineage) {
      const known = [...PRESETS.keys(), ...[...custom.values()].filter((l) => !l.lineage).map((l) => l.name)];
      throw new InvalidArgumentError(
        `${field}.layout must be a preset or a custom layout: ${known.join(', ')} (got ${JSON.stringify(ref)})`,
      );
    }
    return { layout, fromMs: step.from === undefined ? undefined : parseCutover(step.from, `${field}.from`) };
  });
  const lineage = defineLineage(name, steps);
  const last = lineage.versions[lineage.versions.length - 1]?.layout as Layout;
  return {
    ...last,
    name,
    ...(typeof raw.description === 'string' ? { description: raw.description } : {}),
    lineage,
    warnings: lineage.versions.flatMap((v) => v.layout.warnings.map((w) => `version ${v.version} (${v.layout.name}): ${w}`)),
  };
}

/** Seconds left until the layout's time bits run out (negative once they have). */
export function remainingSeconds(layout: Layout, nowMs: number): number {
  return (layout.endsAtMs - nowMs) / 1000;
}

/** The fields of one ID. `values` holds every layout field by name (node fields, shard, sequence). */
export interface DecodedId {
  readonly tick: number;
  readonly timestampMs: number;
  readonly values: Readonly<Record<string, number>>;
  /** Decoded under a lineage: the version that issued the ID, and its layout's name. */
  readonly version?: number;
  readonly layout?: string;
}

/**
 * Builds an ID from its fields (edge code: uses bigint). Each field value must
 * fit its width; the tick must be within [0, maxTick].
 */
export function compose(layout: Layout, tick: number, values: Readonly<Record<string, number>>): bigint {
  if (layout.lineage) {
    throw new InvalidArgumentError(`layout ${layout.name} is a lineage: compose under one of its versions' layouts`);
  }
  if (!Number.isSafeInteger(tick) || tick < 0 || tick > layout.maxTick) {
    throw new InvalidArgumentError(`tick must be an integer from 0 to ${layout.maxTick}`);
  }
  let id = BigInt(tick) << BigInt(layout.lowBits);
  layout.fields.forEach((fl, i) => {
    const v = values[fl.name] ?? 0;
    if (!Number.isSafeInteger(v) || v < 0 || v >= 2 ** fl.bits) {
      throw new InvalidArgumentError(`${fl.name} must be an integer from 0 to ${2 ** fl.bits - 1}`);
    }
    id += BigInt(v) * BigInt(layout.placeValues[i] as number);
  });
  return id;
}

/**
 * The inverse of `compose`. The ID must be in [0, 2^63-1]. Under a lineage,
 * the version is picked from the value, and named in `version` and `layout`.
 */
export function decompose(layout: Layout, id: bigint): DecodedId {
  if (id < 0n || id > (1n << 63n) - 1n) throw new InvalidArgumentError('id must be from 0 to 2^63-1');
  if (layout.lineage) {
    const v = versionOf(layout.lineage, id);
    return { ...decompose(v.layout, id), version: v.version, layout: v.layout.name };
  }
  const tick = Number(id >> BigInt(layout.lowBits));
  const values: Record<string, number> = {};
  layout.fields.forEach((fl, i) => {
    values[fl.name] = Number((id / BigInt(layout.placeValues[i] as number)) & ((1n << BigInt(fl.bits)) - 1n));
  });
  return { tick, timestampMs: layout.epochMs + tick * layout.unitMs, values };
}

/** The worker-id value (all `node` fields together, high to low) split into its named fields. */
export function splitWorker(layout: Layout, workerId: number): Record<string, number> {
  const out: Record<string, number> = {};
  let rest = workerId;
  const nodes = layout.fields.filter((x) => x.role === 'node');
  for (let i = nodes.length - 1; i >= 0; i--) {
    const fl = nodes[i] as LayoutField;
    out[fl.name] = rest % 2 ** fl.bits;
    rest = Math.floor(rest / 2 ** fl.bits);
  }
  return out;
}

/** The worker-id value of an ID's node fields (inverse of `splitWorker`). */
export function joinWorker(layout: Layout, values: Readonly<Record<string, number>>): number {
  let w = 0;
  for (const fl of layout.fields) if (fl.role === 'node') w = w * 2 ** fl.bits + (values[fl.name] ?? 0);
  return w;
}

/** Lifetime in years of a layout counted from its epoch. */
export function lifetimeYears(layout: Layout): number {
  return ((layout.maxTick + 1) * layout.unitMs) / YEAR_MS;
}

/** The refusal once a layout's time bits are used up: it never wraps. */
export function idSpaceExhausted(layout: Layout): UnavailableError {
  return new UnavailableError(
    'ID_SPACE_EXHAUSTED',
    `layout ${layout.name} ran out of time bits on ${new Date(layout.endsAtMs).toISOString()}; it never wraps: use a new layout`,
  );
}
