/**
 * `sequoia audit` past the input: the IDs (sorted and counted by id-sort.ts)
 * run through the checks of audit-analysis.ts against what the store,
 * ledger, marks and leases say, and the report the command prints. No flag
 * parsing and no printing here: the CLI gathers the inputs and prints; a
 * library or the simulator can call it the same way.
 */
import type { Layout } from '../../core/snowflake/layout.js';
import { FALLBACK_FLOOR, type FallbackFields, decodeFallbackId } from '../../core/fallback/fallback-space.js';
import { type HighWaterMark, tripStands } from '../../core/segment/rollback-guard.js';
import type { AuditLedger } from '../../ports/audit-ledger.js';
import type { LeaseHolding } from '../../ports/lease-ledger.js';
import type { LedgerEntry } from '../../ports/range-ledger.js';
import {
  AboveBound,
  AuditAnalysis,
  FallbackIds,
  ForeignIds,
  FUTURE_SLACK_MS,
  inFallbackSpace,
  type IssuedBeforeRecorded,
  LedgerReach,
  RangeCover,
} from './audit-analysis.js';
import { type IdSorter, halvesToBigInt } from './id-sort.js';

export const NO_SEGMENT_LEDGER =
  'the store keeps no range ledger (a Leaf or Tinyid table): duplicates cannot be traced to the ranges that issued them and foreign IDs are not checked';
const NO_FALLBACK_LEASES =
  'the store keeps no worker-id leases: fallback IDs are not checked against the fallback leases (who held each worker id at each millisecond)';
const NO_LEASE_LEDGER = 'no --store: snowflake worker ids are not checked against the lease ledger (who held each worker id at each tick)';

/** A server's high-water mark for a tag, read from its state dir (`null`: it never took a range of the tag). */
export interface ServerMark {
  readonly stateDir: string;
  readonly mark: HighWaterMark | null;
}

/** Who held a fallback worker id: the index answers "held at all", `holders` names them for a duplicate's trace. */
export interface FallbackHolders {
  held(workerId: number, ms: number): boolean;
  holders(workerId: number, ms: number): readonly LeaseHolding[];
}

/** What the checks compare the IDs with, gathered by the caller (the store read after the input). */
export interface AuditInputs {
  readonly tag: string | undefined;
  readonly layout: Layout | undefined;
  /** The tag as the store has it now. */
  readonly info: { maxId: bigint; step: number; fenceEpoch: number; generation?: string | undefined } | undefined;
  /** From the lease ledger: whether anyone held a snowflake worker id at a tick; undefined: not checked. */
  readonly held: ((workerId: number, tick: number) => boolean) | undefined;
  /** The store's range ledger (segment tags); undefined: the store keeps none. */
  readonly ledger: (AuditLedger & { segmentRangePages(tag: string): AsyncIterable<readonly LedgerEntry[]> }) | undefined;
  /** Read only when the tag has a fallback space (the store below 2^62); undefined: no lease ledger to ask. */
  readonly fallbackLeases: (() => Promise<FallbackHolders | undefined>) | undefined;
  /** With --time-column: the rows older than the range that holds their ID (checked while the input streamed). */
  readonly timed: IssuedBeforeRecorded | undefined;
  /** The marks of the tag in the state dirs given, read after the store, and the same read before it. */
  readonly marks: readonly ServerMark[];
  readonly marksBefore: readonly ServerMark[];
  /** Added above the highest ID, range or mark found when proposing a fence; default 10 × the largest step. */
  readonly margin: number | undefined;
  /** For the printed fence command. */
  readonly store: string | undefined;
  readonly stateDir: string | undefined;
  readonly nowMs: number;
}

interface ReportContext {
  readonly inputs: AuditInputs;
  readonly above: AboveBound | undefined;
  readonly foreign: ForeignIds | undefined;
  readonly cover: RangeCover | undefined;
  readonly ledgerReach: LedgerReach | undefined;
  readonly fallback: FallbackIds | undefined;
  readonly fallbackChecked: boolean;
  /** With a fallback space: the highest ID below it, for the gap rate. */
  readonly segmentMax: bigint | undefined;
  readonly empty: boolean;
  readonly seconds: number;
  readonly runs: number;
}

export type AuditReport = ReturnType<typeof buildReport>;

/**
 * Drains the sorter through every check that applies and builds the report.
 * `elapsedSeconds`: the caller's clock, seconds since the input began (time is a port in service/).
 */
export async function checkIds(sorter: IdSorter, inputs: AuditInputs, elapsedSeconds: () => number): Promise<AuditReport> {
  const { tag, layout, info, ledger } = inputs;
  // A tag whose store is below 2^62 issues no segment ID from there: IDs from 2^62 are its clients' fallback IDs.
  const fallbackSpace = info !== undefined && info.maxId <= FALLBACK_FLOOR;
  const fallbackView = fallbackSpace && inputs.fallbackLeases !== undefined ? await inputs.fallbackLeases() : undefined;
  const fallback = fallbackSpace
    ? new FallbackIds({ nowMs: inputs.nowMs, held: fallbackView && ((w, ms) => fallbackView.held(w, ms)) })
    : undefined;
  const analysis = new AuditAnalysis(
    layout === undefined ? { kind: 'segment', tag: tag as string } : { kind: 'snowflake', layout, nowMs: inputs.nowMs, held: inputs.held },
  );
  const above = info === undefined ? undefined : new AboveBound(info.maxId);
  const covered = ledger === undefined || tag === undefined ? undefined : await coverOf(ledger.segmentRangePages(tag));
  const foreign = covered === undefined ? undefined : new ForeignIds(covered.cover.ranges());
  const segmentChecks = [...(above ? [above.add] : []), ...(foreign ? [foreign.add] : [])];
  let segmentMax: [number, number] | undefined;
  sorter.drain(
    segmentChecks.length === 0 && fallback === undefined
      ? analysis.add
      : (hi, lo, c) => {
          analysis.add(hi, lo, c);
          if (fallback !== undefined && inFallbackSpace(hi)) fallback.add(hi, lo, c);
          else {
            segmentMax = [hi, lo];
            for (const add of segmentChecks) add(hi, lo, c);
          }
        },
  );
  analysis.finish();
  if (ledger !== undefined && tag !== undefined) {
    for (const d of analysis.duplicates) {
      const f = fallback === undefined ? undefined : decodeFallbackId(BigInt(d.id));
      d.ledger =
        f === undefined
          ? (await ledger.rangesContaining(tag, BigInt(d.id))).map((e) => e.description)
          : fallbackHolders(f, fallbackView?.holders(f.workerId, f.timestampMs));
    }
  }
  return buildReport(analysis, {
    inputs,
    above,
    foreign,
    cover: covered?.cover,
    ledgerReach: covered?.reach,
    fallback,
    fallbackChecked: fallbackView !== undefined,
    segmentMax: segmentMax && halvesToBigInt(...segmentMax),
    empty: sorter.total === 0,
    seconds: elapsedSeconds(),
    runs: sorter.runCount,
  });
}

/** The ledger's ranges, read a page at a time and coalesced as they come (never every row at once), and how far they reached. */
async function coverOf(pages: AsyncIterable<readonly LedgerEntry[]>): Promise<{ cover: RangeCover; reach: LedgerReach }> {
  const cover = new RangeCover();
  const reach = new LedgerReach();
  for await (const page of pages)
    for (const e of page) {
      cover.add(e);
      reach.add(e);
    }
  return { cover, reach };
}

const shellWord = (s: string): string => (/^[A-Za-z0-9_.:/@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function fenceCommand(tag: string, to: bigint, store: string | undefined, stateDir: string | undefined): string {
  const words = ['sequoia', 'fence', tag, '--to', to.toString()];
  if (store !== undefined) words.push('--store', store);
  if (stateDir !== undefined) words.push('--state-dir', stateDir);
  return words.map(shellWord).join(' ');
}

/** Whether a server with this mark refuses the tag as the store has it now (core/segment/rollback-guard.ts's rule). */
function refuses(m: ServerMark, info: { maxId: bigint; fenceEpoch: number; generation?: string | undefined }): boolean {
  if (m.mark === null) return false;
  // A multi-store set's generation lists its members' (each with its own fence epochs): the epochs are compared as they are.
  const generation = info.generation?.includes(',') ? undefined : info.generation;
  return tripStands(m.mark, info.fenceEpoch, generation) || m.mark.mark > info.maxId;
}

function describeRefusal(m: ServerMark, info: { maxId: bigint; fenceEpoch: number }): string {
  const mark = m.mark as NonNullable<ServerMark['mark']>;
  const why =
    mark.mark > info.maxId
      ? `high-water mark ${mark.mark}, above the store's max_id ${info.maxId}`
      : `high-water mark ${mark.mark}; it recorded a rollback at fence epoch ${mark.trippedAtEpoch}, and the store's is ${info.fenceEpoch}`;
  return `state dir ${m.stateDir}: ${why}`;
}

/**
 * The fence that makes the tag safe: above every ID found, every range the
 * ledger recorded and every mark read, plus a margin (default 10 × the
 * largest of the stored step and the ranges the ledger recorded: a server
 * holds up to two ranges of its grown step beyond the IDs it handed out).
 */
function proposeFence(c: ReportContext, tag: string, info: { maxId: bigint; step: number }): { to: string; command: string } {
  let top = info.maxId - 1n;
  const raise = (v: bigint | undefined) => {
    if (v !== undefined && v > top) top = v;
  };
  raise(c.above?.highest);
  raise(c.ledgerReach?.top);
  for (const m of [...c.inputs.marks, ...c.inputs.marksBefore]) if (m.mark !== null) raise(m.mark.mark - 1n);
  const largest =
    c.ledgerReach !== undefined && c.ledgerReach.largestRange > BigInt(info.step) ? c.ledgerReach.largestRange : BigInt(info.step);
  const margin = c.inputs.margin !== undefined ? BigInt(c.inputs.margin) : 10n * largest;
  const to = top + 1n + margin;
  return { to: to.toString(), command: fenceCommand(tag, to, c.inputs.store, c.inputs.stateDir) };
}

function buildReport(a: AuditAnalysis, c: ReportContext) {
  const fence = c.inputs.info !== undefined && c.inputs.tag !== undefined ? proposeFence(c, c.inputs.tag, c.inputs.info) : undefined;
  const findings = [...segmentFindings(a, c, fence), ...otherFindings(a, c, fence)];
  return {
    clean: findings.length === 0,
    target: c.inputs.tag !== undefined ? { tag: c.inputs.tag } : { layout: c.inputs.layout?.name },
    summary: summaryOf(a, c),
    findings,
    notChecked: notChecked(a, c),
  };
}

interface FindingShape {
  kind: string;
  count: number;
  message: string;
  examples: readonly string[];
  fence?: { to: string; command: string };
  ledger?: Array<{ id: string; count: number; entries: readonly string[] }>;
}

/** Duplicates, foreign IDs, a store gone back (IDs above it, servers refusing, rows older than their range). */
function segmentFindings(a: AuditAnalysis, c: ReportContext, fence: { to: string; command: string } | undefined): FindingShape[] {
  const findings: FindingShape[] = [];
  const { info, marks, marksBefore } = c.inputs;
  if (a.duplicateIds > 0) {
    findings.push({
      kind: 'duplicates',
      count: a.duplicateIds,
      message: `${a.duplicateIds} IDs occur more than once (${a.duplicateExtra} extra rows)`,
      examples: a.duplicates.map((d) => `${d.id} ×${d.count}`),
      ...(c.inputs.ledger !== undefined
        ? { ledger: a.duplicates.map((d) => ({ id: d.id, count: d.count, entries: d.ledger ?? [] })) }
        : {}),
    });
  }
  if (c.foreign !== undefined && c.foreign.count > 0) {
    findings.push({
      kind: 'foreign',
      count: c.foreign.count,
      message: `${c.foreign.count} IDs are covered by no range in the ledger: Sequoia did not issue them (a manual insert, another generator, an old fallback)`,
      examples: c.foreign.examples,
    });
  }
  if (info === undefined || fence === undefined) return findings;
  if (c.above !== undefined && c.above.count > 0) {
    const unread =
      marks.length > 0
        ? ''
        : ` A server that kept its marks refuses the tag until a fence clears its high-water mark (its STORE_ROLLBACK_DETECTED names it): ` +
          `this one clears marks up to ${fence.to}; give audit each server's --state-dir to check theirs.`;
    findings.push({
      kind: 'above-store-max',
      count: c.above.count,
      message:
        `${c.above.count} IDs are at or above the store's max_id ${info.maxId} (highest ${c.above.highest}): the store went back, ` +
        `probably restored from an old backup, and would hand these IDs out again. Make it safe: ${fence.command}.${unread}`,
      examples: c.above.examples,
      fence,
    });
  }
  const refusing = marks.filter((m, i) => {
    const before = marksBefore[i];
    return refuses(m, info) && before !== undefined && refuses(before, info);
  });
  if (refusing.length > 0) {
    findings.push({
      kind: 'refused-by-server-marks',
      count: refusing.length,
      message:
        `${refusing.length} of the ${marks.length} servers whose state dir was given refuse tag ${c.inputs.tag} (STORE_ROLLBACK_DETECTED) ` +
        `until a fence clears their high-water mark: the store went back below IDs they handed out. Make it safe: ${fence.command}`,
      examples: refusing.map((m) => describeRefusal(m, info)),
      fence,
    });
  }
  return findings;
}

/** Rows older than their range (--time-column), snowflake IDs outside their layout or from the future, fallback and worker ids nobody held. */
function otherFindings(a: AuditAnalysis, c: ReportContext, fence: { to: string; command: string } | undefined): FindingShape[] {
  const findings: FindingShape[] = [];
  const tb = c.inputs.timed;
  if (tb !== undefined && tb.count > 0) {
    findings.push({
      kind: 'issued-before-recorded',
      count: tb.count,
      message:
        `${tb.count} rows are older than the ledger's range that holds their ID: the store handed that range out again after the row was written ` +
        '(restored from an old backup, or set back by hand). A server with a fresh state dir issued those IDs a second time (the second ' +
        'holder failed on your unique key, or wrote the ID elsewhere); one that kept its marks refused the range' +
        (fence === undefined ? '' : `. Fence above everything the store forgot: ${fence.command}`),
      examples: tb.examples,
      ...(fence !== undefined ? { fence } : {}),
    });
  }
  const layout = c.inputs.layout;
  if (a.outsideLayout > 0) {
    findings.push({
      kind: 'outside-layout',
      count: a.outsideLayout,
      message: `${a.outsideLayout} IDs do not fit layout ${layout?.name} (their time field is beyond its last tick ${layout?.maxTick}): another generator or layout made them`,
      examples: a.outsideLayoutExamples,
    });
  }
  const ahead = `more than ${FUTURE_SLACK_MS / 1000} s ahead of this machine's clock`;
  if (a.future > 0) {
    findings.push({
      kind: 'future',
      count: a.future,
      message: `${a.future} IDs carry a time ${ahead}: a clock ran ahead when they were made, or another layout made them`,
      examples: a.futureExamples,
    });
  }
  const fb = c.fallback;
  if (fb !== undefined && fb.future > 0) {
    findings.push({
      kind: 'future',
      count: fb.future,
      message: `${fb.future} fallback IDs carry a time ${ahead}: a client's clock ran ahead, or another generator made them`,
      examples: fb.futureExamples,
    });
  }
  if (fb !== undefined && fb.unheld > 0) {
    findings.push({
      kind: 'unheld-fallback-worker-id',
      count: fb.unheld,
      message: `${fb.unheld} fallback IDs carry a worker id that no client held at their millisecond in the lease ledger: another generator, a client whose clock was off by more than its lease's margin, or IDs older than the ledger's retention (ledgerRetentionDays)`,
      examples: fb.unheldExamples,
    });
  }
  if (a.unheld > 0) {
    findings.push({
      kind: 'unheld-worker-id',
      count: a.unheld,
      message: `${a.unheld} IDs carry a worker id that nobody held at their tick in the lease ledger: another generator, a copy of a server with a fixed worker id, or IDs older than the ledger's retention (ledgerRetentionDays)`,
      examples: a.unheldExamples,
    });
  }
  return findings;
}

function notChecked(a: AuditAnalysis, c: ReportContext): string[] {
  const out: string[] = [];
  const fb = c.fallback;
  const tb = c.inputs.timed;
  if (c.inputs.tag !== undefined && c.inputs.ledger === undefined) out.push(NO_SEGMENT_LEDGER);
  if (c.inputs.layout !== undefined && c.inputs.held === undefined) out.push(NO_LEASE_LEDGER);
  if (fb !== undefined && fb.count > 0 && !c.fallbackChecked) out.push(NO_FALLBACK_LEASES);
  if (c.empty) out.push('0 IDs read (--allow-empty): no ID was checked');
  if (tb !== undefined && tb.checked < a.count)
    out.push(`${a.count - tb.checked} rows have no time (NULL in --time-column): not checked for issued-before-recorded`);
  if (c.foreign !== undefined && c.foreign.beforeLedger > 0) {
    out.push(
      `${c.foreign.beforeLedger} IDs lie below the ledger's first range (issued before the ledger began, or their rows were pruned): not checked for foreign IDs`,
    );
  }
  return out;
}

function summaryOf(a: AuditAnalysis, c: ReportContext) {
  const { info, tag, layout } = c.inputs;
  const fb = c.fallback;
  return {
    count: a.count,
    distinct: a.distinct,
    min: a.min?.toString() ?? null,
    max: a.max?.toString() ?? null,
    ...(info !== undefined ? { storeMaxId: info.maxId.toString(), fenceEpoch: info.fenceEpoch } : {}),
    ...(tag !== undefined ? { gapRate: a.gapRate(fb && { max: c.segmentMax, excluded: fb.distinct }) } : {}),
    ...(fb !== undefined && fb.count > 0 ? { fallback: fallbackSummary(fb) } : {}),
    ...(c.foreign !== undefined && c.cover !== undefined
      ? {
          ledger: {
            firstId: c.foreign.lowest?.toString() ?? null,
            belowFirstRange: c.foreign.beforeLedger,
            rows: c.cover.rows,
            peakRangesHeld: c.cover.peakHeld,
          },
        }
      : {}),
    ...(layout !== undefined ? { perDay: a.perDayCounts() } : {}),
    seconds: Math.round(c.seconds * 1000) / 1000,
    spilledRuns: c.runs,
  };
}

function fallbackSummary(fb: FallbackIds) {
  return {
    count: fb.count,
    distinct: fb.distinct,
    min: fb.min?.toString() ?? null,
    max: fb.max?.toString() ?? null,
    workerIds: fb.workerIds.size,
    first: new Date(fb.firstMs as number).toISOString(),
    last: new Date(fb.lastMs as number).toISOString(),
  };
}

/** A fallback ID in a duplicate's trace: its fields and the clients that held its worker id then (null: no lease ledger to ask). */
function fallbackHolders(f: FallbackFields, holders: readonly LeaseHolding[] | undefined): string[] {
  const what = `fallback ID: worker id ${f.workerId} at ${new Date(f.timestampMs).toISOString()}, sequence ${f.sequence}`;
  if (holders === undefined) return [`${what} (no lease ledger)`];
  if (holders.length === 0) return [`${what}: no client held the worker id then`];
  return holders.map(
    (h) =>
      `${what}: held by ${h.holder.host} pid ${h.holder.pid} (owner ${h.owner}, generation ${h.generation}${h.released ? ', released' : ''})`,
  );
}
