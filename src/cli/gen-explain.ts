/**
 * `sequoia gen` and `sequoia explain` for the coordination-free generators and
 * business numbers. Output is JSON for explain, one ID per line for gen.
 */
import type { Command } from 'commander';
import {
  type BusinessNumberFormat,
  type DailyNumberFormat,
  DEFAULT_PREFIXED_FORMAT,
  businessNumberFormatSpec,
  createBusinessNumberCodec,
  createPrefixedIdCodec,
  parsePrefixedId,
  parseDailyDigits,
  parseDailyNumber,
  resolveBusinessNumberFormat,
  splitPrefixedId,
  validateTimeZone,
} from '../core/business-number/index.js';
import { TypeIdGenerator, describeTypeId } from '../core/typeid/index.js';
import { InvalidArgumentError } from '../core/errors.js';
import { DEFAULT_LAYOUT, type Layout, decompose, defineLayouts, getLayout, joinWorker } from '../core/snowflake/layout.js';
import { assertTag } from '../core/validate.js';
import { decomposeFlake128, parseFlake128 } from '../core/flake128/index.js';
import { ObjectIdGenerator, parseObjectId } from '../core/objectid/index.js';
import { describeUuid, ulidTimestampMs, ulidToUuid, UuidV4Generator, UuidV7Generator } from '../core/uuid/index.js';
import { systemClock } from '../core/clock.js';
import { systemRandom } from '../core/random.js';
import { MAX_COUNT } from '../core/request-rules.js';
import { FALLBACK_FLOOR, decodeFallbackId } from '../core/fallback/fallback-space.js';
import { parseDecimalId } from '../core/id.js';
import { spansAt } from '../core/snowflake/holding-index.js';
import { SNOWFLAKE_LAYOUTS, explainSnowflake, genSnowflake, isSnowflakeLayout } from './snowflake-commands.js';
import { DEFAULT_STATE_DIR, DEFAULT_STORE_URL, WORKER_ID_PROVIDER_SPECS } from '../app/defaults.js';

export const GEN_KINDS = ['uuid', 'uuid4', 'ulid', 'objectid', 'typeid'] as const;
/** Every kind `sequoia gen` takes: the two with a store, then the coordination-free ones. */
export const ALL_GEN_KINDS = ['snowflake', 'segment', 'daily', ...GEN_KINDS] as const;
export const EXPLAIN_LAYOUTS = ['uuid', 'ulid', 'objectid', 'flake128', 'fallback', 'typeid', 'daily', 'daily:check'] as const;

export function parseCountArg(v: string): number {
  if (!/^[1-9][0-9]{0,5}$/.test(v) || Number(v) > 100_000) {
    throw new InvalidArgumentError(`--count must be an integer from 1 to 100000, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

export function generate(kind: string, count: number, prefix = ''): string[] {
  const out: string[] = [];
  if (kind === 'typeid') {
    const g = new TypeIdGenerator({ prefix, clock: systemClock, random: systemRandom });
    for (let i = 0; i < count; i++) out.push(g.next());
  } else if (kind === 'uuid' || kind === 'ulid') {
    const g = new UuidV7Generator({ clock: systemClock, random: systemRandom });
    for (let i = 0; i < count; i++) out.push(kind === 'ulid' ? g.nextUlid() : g.next());
  } else if (kind === 'uuid4') {
    const g = new UuidV4Generator({ random: systemRandom });
    for (let i = 0; i < count; i++) out.push(g.next());
  } else if (kind === 'objectid') {
    const g = new ObjectIdGenerator({ clock: systemClock, random: systemRandom });
    for (let i = 0; i < count; i++) out.push(g.next());
  } else {
    throw new InvalidArgumentError(`kind must be one of ${ALL_GEN_KINDS.join(', ')} (got ${JSON.stringify(kind)})`);
  }
  return out;
}

const UUID_LIKE = /^(urn:uuid:)?\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?$/i;
const ULID_LIKE = /^[0-9A-HJKMNP-TV-Z]{26}$/i;
const OBJECTID_LIKE = /^[0-9a-f]{24}$/i;
/** A TypeID with a prefix (a bare one reads as a ULID: the same 128 bits). */
const TYPEID_LIKE = /_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const DAILY_LIKE = /^[0-9]{8}-[0-9]{1,12}$/;

/** Decodes an ID of a coordination-free layout, or a business number with `format`. */
export function explain(
  id: string,
  opts: { layout?: string; format?: string; formats?: Record<string, unknown>; layouts?: ReadonlyMap<string, Layout> },
): Record<string, unknown> {
  const named = new Map(Object.entries(opts.formats ?? {})) as ReadonlyMap<string, BusinessNumberFormat>;
  const format = opts.format === undefined ? undefined : resolveBusinessNumberFormat(opts.format, named, '--format');
  if (opts.layout === 'typeid' || (opts.layout === undefined && format === undefined && TYPEID_LIKE.test(id))) {
    const { typeid, ...d } = describeTypeId(id);
    return { id: typeid, kind: 'typeid', ...d, ...(d.timestampMs !== undefined ? { time: new Date(d.timestampMs).toISOString() } : {}) };
  }
  if (
    opts.layout === 'daily' ||
    opts.layout === 'daily:check' ||
    (opts.layout === undefined && format === undefined && DAILY_LIKE.test(id))
  ) {
    const { day, counter } = parseDailyNumber(id, { check: opts.layout === 'daily:check' });
    return {
      id,
      kind: 'daily',
      day: `${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}`,
      counter: counter.toString(),
    };
  }
  if (splitPrefixedId(id) !== undefined || (opts.layout === undefined && id.includes('_'))) {
    // `ord_…`: the ID under its type prefix, read in --format (default base62:11) and explained as a bare ID would be.
    const f = format ?? DEFAULT_PREFIXED_FORMAT;
    const { prefix, value } = parsePrefixedId(id, f);
    const inner = explain(value.toString(), { layout: opts.layout, layouts: opts.layouts });
    return { ...inner, id, prefix, format: opts.format ?? businessNumberFormatSpec(f), value: value.toString() };
  }
  if (format !== undefined) {
    return { id, kind: 'business-number', format: opts.format, value: createBusinessNumberCodec(format).decode(id).toString() };
  }
  if (isSnowflakeLayout(opts.layout, opts.layouts) || (opts.layout === undefined && /^[0-9]{1,19}$/.test(id))) {
    return explainSnowflake(id, opts.layout ?? DEFAULT_LAYOUT, opts.layouts);
  }
  return explainTextLayout(id, opts.layout, opts.layouts);
}

/** The layouts that are neither snowflake nor a business number: named, or guessed from the text's shape. */
function explainTextLayout(
  id: string,
  named: string | undefined,
  layouts: ReadonlyMap<string, Layout> | undefined,
): Record<string, unknown> {
  const layout = named ?? (UUID_LIKE.test(id) ? 'uuid' : ULID_LIKE.test(id) ? 'ulid' : OBJECTID_LIKE.test(id) ? 'objectid' : undefined);
  switch (layout) {
    case 'uuid': {
      const { text, ...d } = describeUuid(id);
      return { id: text, kind: 'uuid', ...d, ...(d.timestampMs !== undefined ? { time: new Date(d.timestampMs).toISOString() } : {}) };
    }
    case 'ulid': {
      const ms = ulidTimestampMs(id);
      return { id, kind: 'ulid', time: new Date(ms).toISOString(), timestampMs: ms, uuid: ulidToUuid(id) };
    }
    case 'objectid': {
      const o = parseObjectId(id);
      return {
        id: o.text,
        kind: 'objectid',
        time: new Date(o.timestampSeconds * 1000).toISOString(),
        timestampMs: o.timestampSeconds * 1000,
        processUnique: o.processUnique,
        counter: o.counter,
      };
    }
    case 'fallback': {
      // A segment tag with a fallback space (docs/operations.md#fallback-space): below 2^62 a segment ID, from it a client's fallback ID.
      const value = parseDecimalId(id);
      if (value === undefined)
        throw new InvalidArgumentError(`--layout fallback takes a decimal ID from 0 to 2^63-1, got ${JSON.stringify(id)}`);
      return (
        describeFallback(id, value) ?? {
          id,
          kind: 'segment',
          space: 'segment',
          note: "below 2^62: issued by a server from the tag's segments",
        }
      );
    }
    case 'flake128': {
      const f = decomposeFlake128(parseFlake128(id));
      return { id, kind: 'flake128', ...jsonSafe(f) };
    }
    default:
      throw new InvalidArgumentError(
        named !== undefined
          ? `unknown layout ${JSON.stringify(named)}: use ${[...SNOWFLAKE_LAYOUTS, ...(layouts?.keys() ?? []), ...EXPLAIN_LAYOUTS].join(', ')}`
          : `cannot tell the layout of ${JSON.stringify(id)}: give --layout (${[...SNOWFLAKE_LAYOUTS, ...EXPLAIN_LAYOUTS].join(', ')}) or --format`,
      );
  }
}

function describeFallback(id: string, value: bigint): Record<string, unknown> | undefined {
  const f = decodeFallbackId(value);
  if (f === undefined) return undefined;
  return {
    id,
    kind: 'fallback',
    space: 'fallback',
    time: new Date(f.timestampMs).toISOString(),
    timestampMs: f.timestampMs,
    workerId: f.workerId,
    sequence: f.sequence,
  };
}

function jsonSafe(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
}

export function registerGenAndExplain(program: Command): void {
  registerGen(program);
  registerExplain(program);
}

function registerGen(program: Command): void {
  program
    .command('gen <kind>')
    .description(`print new IDs: ${ALL_GEN_KINDS.join(' | ')}`)
    .option('--count <n>', 'how many (default 1)', parseCountArg)
    .option(
      '--layout <layout>',
      `snowflake layout: ${SNOWFLAKE_LAYOUTS.join(' | ')} (env SEQUOIA_SNOWFLAKE_LAYOUT; default ${DEFAULT_LAYOUT})`,
    )
    .option('--shard <n>', 'snowflake instagram layout: the logical shard')
    .option(
      '--store <url>',
      `snowflake: the store the worker id is leased from; segment: the store the IDs come from (env SEQUOIA_STORE; default ${DEFAULT_STORE_URL})`,
    )
    .option(
      '--worker-id-provider <spec>',
      `snowflake: ${WORKER_ID_PROVIDER_SPECS} (not worker-node: it would take an id for good per call)`,
    )
    .option('--config <file>', 'snowflake: JSON config file with custom `layouts` (env SEQUOIA_CONFIG)')
    .option('--tag <tag>', 'segment: the tag to draw from')
    .option('--state-dir <dir>', `segment: local state directory (env SEQUOIA_STATE_DIR; default ${DEFAULT_STATE_DIR} where it exists)`)
    .option('--time-zone <iana>', 'daily: the IANA time zone whose day stamps the numbers (e.g. Asia/Shanghai, UTC)')
    .option('--digits <n>', 'daily: counter digits, 1-12 (default 6)')
    .option('--check', 'daily: append a check symbol (Crockford mod 37)')
    .option('--prefix <prefix>', 'typeid: its type prefix; snowflake, segment: print each ID as PREFIX_ + the ID in --format')
    .option(
      '--format <spec>',
      `snowflake, segment with --prefix: how the ID is written (default ${businessNumberFormatSpec(DEFAULT_PREFIXED_FORMAT)})`,
    )
    .action(runGen);
}

function registerExplain(program: Command): void {
  program
    .command('explain <id>')
    .description('decode an ID: its time, node and sequence fields, or a business number back to its ID')
    .option(
      '--layout <layout>',
      `${[...SNOWFLAKE_LAYOUTS, ...EXPLAIN_LAYOUTS].join(' | ')} (guessed from the text when omitted; decimal IDs: ${DEFAULT_LAYOUT})`,
    )
    .option(
      '--format <name>',
      'a business-number format: a configured name (formats from --config / SEQUOIA_FORMATS) or e.g. base62, crockford32:13:check',
    )
    .option('--config <file>', 'JSON config file with `formats` and `layouts` (env SEQUOIA_CONFIG)')
    .option(
      '--tag <tag>',
      'a segment ID of this tag: trace it in the range ledger (the range, server, time and fence epoch that issued it)',
    )
    .option(
      '--store <url>',
      "with --tag: the store whose range ledger traces the ID (env SEQUOIA_STORE); for a snowflake ID: the store its worker ids are leased from, to name who held the worker id at the ID's tick (the lease ledger)",
    )
    .option('--state-dir <dir>', 'with --tag: state directory (env SEQUOIA_STATE_DIR)')
    .action(runExplain);
}

interface GenOptions {
  count?: number;
  layout?: string;
  shard?: string;
  store?: string;
  workerIdProvider?: string;
  tag?: string;
  stateDir?: string;
  config?: string;
  prefix?: string;
  format?: string;
  timeZone?: string;
  digits?: string;
  check?: boolean;
}

async function runGen(kind: string, o: GenOptions): Promise<void> {
  if (kind === 'daily') {
    if (o.tag === undefined || o.timeZone === undefined) throw new InvalidArgumentError('gen daily needs --tag and --time-zone');
    const format = {
      timeZone: validateTimeZone(o.timeZone, '--time-zone'),
      digits: parseDailyDigits(o.digits, '--digits'),
      check: o.check === true,
    };
    console.log((await genDaily(o.tag, o.count ?? 1, format, { store: o.store, stateDir: o.stateDir })).join('\n'));
    return;
  }
  if (kind === 'snowflake' || kind === 'segment') {
    // Checked before any ID is taken: a bad prefix costs no IDs.
    const prefixed = o.prefix === undefined ? undefined : createPrefixedIdCodec(o.prefix, genFormat(o.format));
    if (prefixed === undefined && o.format !== undefined) throw new InvalidArgumentError('--format needs --prefix');
    if (kind === 'segment' && o.tag === undefined) throw new InvalidArgumentError('gen segment needs --tag');
    const ids =
      kind === 'snowflake'
        ? await genSnowflake({ ...o, count: o.count ?? 1 })
        : await genSegment(o.tag!, o.count ?? 1, { store: o.store, stateDir: o.stateDir });
    console.log((prefixed === undefined ? ids : ids.map((id) => prefixed.encode(BigInt(id)))).join('\n'));
    return;
  }
  if (o.format !== undefined || (o.prefix !== undefined && kind !== 'typeid')) {
    throw new InvalidArgumentError(`gen ${kind} takes no ${o.format !== undefined ? '--format' : '--prefix'}`);
  }
  console.log(generate(kind, o.count ?? 1, o.prefix).join('\n'));
}

async function runExplain(
  id: string,
  o: { layout?: string; format?: string; config?: string; tag?: string; store?: string; stateDir?: string },
): Promise<void> {
  if (o.tag !== undefined) {
    console.log(JSON.stringify(await traceSegment(id, o.tag, o), null, 2));
    return;
  }
  // The config schema loads only when a format or layout must be looked up.
  const config =
    o.format !== undefined || o.layout !== undefined
      ? (await import('../app/config.js')).resolveConfig({}, process.env, o.config)
      : undefined;
  const layouts = defineLayouts(config?.layouts);
  const out = explain(id, { layout: o.layout, format: o.format, formats: config?.formats, layouts });
  if (o.store !== undefined) {
    if (out.kind !== 'snowflake')
      throw new InvalidArgumentError(`--store: only snowflake IDs are traced to a worker-id lease (this is a ${String(out.kind)})`);
    // A prefixed ID (`ord_…`) is traced by the ID it holds.
    const decimal = typeof out.prefix === 'string' && typeof out.value === 'string' ? out.value : id;
    const named = getLayout(o.layout ?? 'twitter', layouts);
    // Under a lineage, the worker id was leased in the space of the version that issued the ID.
    const issuedBy = named.lineage?.versions.find((v) => v.version === out.version)?.layout ?? named;
    out.lease = await leaseAt(decimal, issuedBy, o.store);
  }
  console.log(JSON.stringify(out, null, 2));
}

function genFormat(spec: string | undefined): BusinessNumberFormat {
  return spec === undefined ? DEFAULT_PREFIXED_FORMAT : resolveBusinessNumberFormat(spec, undefined, '--format');
}

/** Who held the snowflake ID's worker id at its tick, from the store's lease ledger. */
async function leaseAt(id: string, layout: Layout, store: string): Promise<Record<string, unknown>> {
  const d = decompose(layout, parseDecimalId(id) as bigint);
  const workerId = joinWorker(layout, d.values);
  const { withLeaseLedger } = await import('../app/audit.js');
  const holders = spansAt(await withLeaseLedger(store, (ledger) => ledger.holdings(layout.spaceKey, workerId)), d.tick);
  const iso = (tick: number): string | null => {
    const ms = layout.epochMs + tick * layout.unitMs;
    return Number.isFinite(ms) && ms <= 8.64e15 ? new Date(ms).toISOString() : null;
  };
  const heldBy = holders.map((h) => ({
    host: h.holder.host,
    pid: h.holder.pid,
    instance: h.holder.instance,
    version: h.holder.version,
    owner: h.owner,
    generation: h.generation,
    began: h.began ?? null,
    released: h.released,
    fromTick: h.fromTick,
    untilTick: h.untilTick,
    from: iso(h.fromTick),
    until: iso(h.untilTick),
  }));
  const who = heldBy
    .map((h) => `${h.host} pid ${h.pid} (instance ${h.instance || '?'}, version ${h.version || '?'}, generation ${h.generation})`)
    .join('; ');
  return {
    space: layout.spaceKey,
    workerId,
    tick: d.tick,
    heldBy,
    message:
      heldBy.length === 0
        ? `nobody held worker id ${workerId} at tick ${d.tick} in the lease ledger: not made by a Sequoia server leasing from this store, or older than the ledger's retention`
        : `worker id ${workerId} at tick ${d.tick} was held by ${who}`,
  };
}

/** `explain ID --tag T`: the ledger entries that hold ID, read from the store. */
async function traceSegment(id: string, tagText: string, o: { layout?: string; format?: string; store?: string; stateDir?: string }) {
  if (o.layout !== undefined || o.format !== undefined)
    throw new InvalidArgumentError('--tag traces a segment ID: give no --layout or --format');
  const tag = assertTag(tagText);
  const value = parseDecimalId(id);
  if (value === undefined) throw new InvalidArgumentError(`a segment ID is a decimal from 0 to 2^63-1, got ${JSON.stringify(id)}`);
  const [{ traceSegmentId, fallbackLeases }, { rangesAnswer }] = await Promise.all([
    import('../app/audit.js'),
    import('../service/ledger-view.js'),
  ]);
  const { entries, info } = await traceSegmentId(o, tag, value);
  const fallback = info !== undefined && info.maxId <= FALLBACK_FLOOR ? describeFallback(id, value) : undefined;
  if (fallback !== undefined && info !== undefined) {
    // No range holds a fallback ID: the client that held its worker id at its millisecond made it.
    const leases = await fallbackLeases(o, tag);
    const { workerId, timestampMs } = fallback as { workerId: number; timestampMs: number };
    return {
      ...fallback,
      tag,
      heldBy:
        leases
          ?.holders(workerId, timestampMs)
          .map((h) => ({ ...h.holder, owner: h.owner, generation: h.generation, released: h.released })) ?? null,
      storeMaxId: info.maxId.toString(),
    };
  }
  return {
    kind: 'segment',
    ...rangesAnswer(tag, value, entries),
    ...(info === undefined ? { tagExists: false } : { storeMaxId: info.maxId.toString(), fenceEpoch: info.fenceEpoch }),
  };
}

/**
 * Segment IDs straight from the store, for scripts and one-off fixes: the same
 * allocator as a server (rollback guard included); the unused rest of the
 * range is given back on exit when no one allocated after it.
 */
export async function genSegment(tag: string, count: number, opts: { store?: string; stateDir?: string }): Promise<string[]> {
  const [{ resolveCommandConfig }, { withIdService }] = await Promise.all([import('../app/command-config.js'), import('../app/wiring.js')]);
  const config = resolveCommandConfig({ store: opts.store, stateDir: opts.stateDir }, { stateDir: true });
  return withIdService(
    config,
    async (service) => {
      const ids: string[] = [];
      for (let left = count; left > 0; left -= MAX_COUNT) {
        for (const id of await service.nextMany(tag, Math.min(left, MAX_COUNT))) ids.push(String(id));
      }
      return ids;
    },
    { checkStateDir: true },
  );
}

/**
 * Date-stamped numbers from the store (service/daily-numbers.ts): each run
 * is a restart, so the day's tag and the latest day come from the store.
 */
export async function genDaily(
  tag: string,
  count: number,
  format: DailyNumberFormat,
  opts: { store?: string; stateDir?: string },
): Promise<string[]> {
  assertTag(tag);
  const [{ resolveCommandConfig }, { withIdService }, { DailyNumbers }] = await Promise.all([
    import('../app/command-config.js'),
    import('../app/wiring.js'),
    import('../service/daily-numbers.js'),
  ]);
  // As gen segment: the defaults only where they exist, never a new ./data in the working directory.
  const config = resolveCommandConfig({ store: opts.store, stateDir: opts.stateDir }, { stateDir: true });
  return withIdService(
    config,
    async (service) => {
      const numbers = new DailyNumbers({ service, tag, format });
      const out: string[] = [];
      for (let left = count; left > 0; left -= MAX_COUNT) out.push(...(await numbers.nextMany(Math.min(left, MAX_COUNT))));
      return out;
    },
    { checkStateDir: true },
  );
}
