/**
 * `sequoia audit`: checks IDs from the business's own data. Exit 0 clean,
 * 1 findings, 2 when the audit could not run (bad input, options, a store or
 * database that cannot be read): 1 always means "look at the findings".
 */
import { accessSync, constants, createReadStream, statSync } from 'node:fs';
import type { Command } from 'commander';
import { InvalidArgumentError, SequoiaError } from '../core/errors.js';
import { assertTag } from '../core/validate.js';
import { type Layout, defineLayouts, getLayout } from '../core/snowflake/layout.js';
import {
  AboveBound,
  AuditAnalysis,
  FallbackIds,
  ForeignIds,
  FUTURE_SLACK_MS,
  inFallbackSpace,
  IssuedBeforeRecorded,
  LedgerReach,
  RangeCover,
  type RecordedRange,
} from './audit/audit-analysis.js';
import { FALLBACK_FLOOR, type FallbackFields, decodeFallbackId } from '../core/fallback/fallback-space.js';
import type { LeaseHolding } from '../ports/lease-ledger.js';
import { IdSorter, LineParser, halvesToBigInt } from './audit/id-sort.js';
import { HoldingIndex } from '../core/snowflake/holding-index.js';
import type { LedgerEntry } from '../ports/range-ledger.js';
import type { ServerMark } from '../app/audit.js';

interface AuditOpts {
  csvColumn?: string;
  db?: string;
  query?: string;
  tag?: string;
  store?: string;
  stateDir?: string[];
  layout?: string;
  config?: string;
  json?: boolean;
  progress?: boolean;
  fenceMargin?: string;
  tmpDir?: string;
  chunkIds?: string;
  fallbackLeaseTtlMs?: string;
  allowEmpty?: boolean;
  timeColumn?: string;
  timeMarginMs?: string;
}

/** The default of --time-margin-ms: clock skew between the business rows and the store, and rows stamped before their ID was drawn. */
const TIME_MARGIN_MS = 60_000;

const NO_SEGMENT_LEDGER =
  'the store keeps no range ledger (a Leaf or Tinyid table): duplicates cannot be traced to the ranges that issued them and foreign IDs are not checked';
const NO_FALLBACK_LEASES =
  'the store keeps no worker-id leases: fallback IDs are not checked against the fallback leases (who held each worker id at each millisecond)';
const NO_LEASE_LEDGER = 'no --store: snowflake worker ids are not checked against the lease ledger (who held each worker id at each tick)';

export function registerAudit(program: Command): void {
  program
    .command('audit [file]')
    .description(
      'check IDs from your own data: duplicates, IDs above the store (a restored store), snowflake IDs outside their layout, from the future or from a worker id nobody held',
    )
    .option('--csv-column <n|name>', 'read this comma-separated column (1-based number, or a header name); default: one ID per line')
    .option('--db <url>', 'read IDs from a database instead: postgres://…, mysql://…, sqlite:PATH')
    .option('--query <sql>', 'with --db: a query whose first column is the ID, e.g. "SELECT id FROM orders"')
    .option('--tag <tag>', 'the IDs are segment IDs of this tag (compared with the store: --store, --state-dir)')
    .option(
      '--store <url>',
      'with --tag: store URL (env SEQUOIA_STORE); with --layout: the store the worker ids were leased from, whose lease ledger says who held each',
    )
    .option(
      '--state-dir <dir>',
      "with --tag: a server's state directory, whose high-water mark of the tag the fence must clear (repeat for each server)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--layout <layout>', 'the IDs are snowflake IDs of this layout (a preset, or a custom one from --config)')
    .option('--config <file>', 'JSON config file with custom `layouts` (env SEQUOIA_CONFIG)')
    .option(
      '--fence-margin <n>',
      "with --tag: added above the highest ID, range or mark found when proposing a fence (default 10 × the largest of the tag's step and every range its ledger recorded)",
    )
    .option('--allow-empty', 'an input with no ID is expected: say "0 IDs read" and exit 0 (without it, an empty input exits 2)')
    .option(
      '--time-column <name|n>',
      "with --db and --tag: a column of --query holding each row's creation time; a row older than the ledger's range that holds its ID is reported (issued-before-recorded)",
    )
    .option(
      '--time-margin-ms <ms>',
      `with --time-column: how much older than its range a row may be (clock skew; default ${TIME_MARGIN_MS})`,
    )
    .option('--json', 'print JSON')
    .option('--no-progress', 'no progress line on stderr (it is drawn only on a terminal anyway)')
    .option('--tmp-dir <dir>', 'where sorted runs are spilled (default the system temp directory)')
    .option('--chunk-ids <n>', 'IDs sorted in memory per spilled run (default 4194304: 32 MiB)')
    .option(
      '--fallback-lease-ttl-ms <ms>',
      "with --tag: the servers' fallback lease length, to check fallback IDs against the fallback leases (env SEQUOIA_FALLBACK_LEASE_TTL_MS; default 900000)",
    )
    .action(async (file: string | undefined, o: AuditOpts) => {
      try {
        process.exitCode = await runAudit(file, o);
      } catch (e) {
        const msg = e instanceof SequoiaError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
        console.error(`sequoia audit: ${msg}`);
        process.exitCode = 2;
      }
    });
}

function positive(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v)))
    throw new InvalidArgumentError(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

async function resolveLayout(name: string, configFile: string | undefined): Promise<Layout> {
  let custom: ReadonlyMap<string, Layout> | undefined;
  if (configFile !== undefined || process.env.SEQUOIA_CONFIG !== undefined) {
    const { configuredLayouts } = await import('../app/audit.js');
    custom = defineLayouts(configuredLayouts(configFile));
  }
  return getLayout(name, custom);
}

async function leaseIndex(store: string, layout: Layout): Promise<HoldingIndex> {
  const { withLeaseLedger } = await import('../app/audit.js');
  return new HoldingIndex(await withLeaseLedger(store, (ledger) => ledger.holdings(layout.spaceKey)));
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

/** The tag's `allocate` rows with their times, for --time-column. */
async function allocationsOf(o: AuditOpts, tag: string): Promise<RecordedRange[]> {
  const ledger = await (await import('../app/audit.js')).openAuditLedger({ store: o.store });
  if (ledger === undefined)
    throw new InvalidArgumentError(
      `--time-column: ${NO_SEGMENT_LEDGER.replace(/:.*/, '')}: there is no range to compare the rows' times with`,
    );
  try {
    const out: RecordedRange[] = [];
    for await (const page of ledger.segmentRangePages(tag))
      for (const e of page) if (e.kind === 'allocate') out.push({ first: e.first, last: e.last, stride: e.stride, atMs: e.atMs });
    return out;
  } finally {
    await ledger.close();
  }
}

function wholeFromZero(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (!/^[0-9]{1,15}$/.test(v)) throw new InvalidArgumentError(`${name} must be a whole number from 0, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** --tmp-dir must be a directory audit can write its sorted runs to: checked before the input is read, not when the first run spills. */
function checkTmpDir(dir: string | undefined): void {
  if (dir === undefined) return;
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    throw new InvalidArgumentError(`--tmp-dir: ${JSON.stringify(dir)} does not exist`);
  }
  if (!isDir) throw new InvalidArgumentError(`--tmp-dir: ${JSON.stringify(dir)} is not a directory`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch {
    throw new InvalidArgumentError(`--tmp-dir: ${JSON.stringify(dir)} cannot be written to`);
  }
}

async function runAudit(file: string | undefined, o: AuditOpts): Promise<number> {
  if ((o.tag === undefined) === (o.layout === undefined))
    throw new InvalidArgumentError('give exactly one of --tag T (segment IDs) or --layout L (snowflake IDs)');
  if ((o.db === undefined) !== (o.query === undefined)) throw new InvalidArgumentError('--db and --query go together');
  if (o.db !== undefined && (file !== undefined || o.csvColumn !== undefined))
    throw new InvalidArgumentError('--db reads from the database: give no file and no --csv-column');
  if (o.timeColumn !== undefined && (o.db === undefined || o.tag === undefined))
    throw new InvalidArgumentError('--time-column goes with --db URL --query SQL and --tag T (the times come with the IDs from the query)');
  if (o.timeMarginMs !== undefined && o.timeColumn === undefined)
    throw new InvalidArgumentError('--time-margin-ms goes with --time-column');
  if (o.stateDir !== undefined && o.tag === undefined)
    throw new InvalidArgumentError('--state-dir goes with --tag (the marks are per tag)');
  const tag = o.tag === undefined ? undefined : assertTag(o.tag);
  const layout = o.layout === undefined ? undefined : await resolveLayout(o.layout, o.config);
  const margin = positive('--fence-margin', o.fenceMargin);
  const timeMargin = wholeFromZero('--time-margin-ms', o.timeMarginMs, TIME_MARGIN_MS);
  checkTmpDir(o.tmpDir);
  const sorter = new IdSorter({ chunkIds: positive('--chunk-ids', o.chunkIds), tmpDir: o.tmpDir });
  const progress = o.progress !== false && process.stderr.isTTY === true ? new Progress() : undefined;
  const startedAt = performance.now();
  try {
    // The time check's ranges are read before the input (the rows are checked as they stream): a range
    // recorded after this read holds no row older than it yet, and is read again for the other checks below.
    const timed =
      o.timeColumn !== undefined && tag !== undefined ? new IssuedBeforeRecorded(await allocationsOf(o, tag), timeMargin) : undefined;
    if (o.db !== undefined) await readDb(o.db, o.query as string, sorter, progress, o.timeColumn, timed);
    else await readText(file, o.csvColumn, sorter, progress);
    progress?.done(sorter.total);
    if (sorter.total === 0 && o.allowEmpty !== true) {
      const from =
        o.db !== undefined
          ? 'the query selected no row'
          : file === undefined || file === '-'
            ? 'stdin was empty'
            : `${JSON.stringify(file)} holds no ID`;
      throw new InvalidArgumentError(
        `0 IDs read (${from}): nothing was checked, so nothing is clean. Give --allow-empty when an empty input is expected`,
      );
    }

    // The marks are read before and after the store: a server's mark is recorded after the store answered, so a
    // healthy server's mark read before is never above max_id read after, and one a give-back lowered while the
    // store was read is below it after. A server refuses only if both readings say so.
    const readMarks = async () =>
      tag === undefined || o.stateDir === undefined ? [] : (await import('../app/audit.js')).serverMarks(o.stateDir, o.store, tag);
    const marksBefore = await readMarks();
    // The store is read after the input: every ID in it was issued from a range the store had already given out.
    const info = tag === undefined ? undefined : await (await import('../app/audit.js')).storeTag(o, tag);
    const marks = await readMarks();
    // Read after the input too: a holder's horizon is in the ledger before it issues an ID under it.
    const held = layout !== undefined && o.store !== undefined ? await leaseIndex(o.store, layout) : undefined;
    const ledger = tag === undefined ? undefined : await (await import('../app/audit.js')).openAuditLedger({ store: o.store });
    try {
      // A tag whose store is below 2^62 issues no segment ID from there: IDs from 2^62 are its clients' fallback IDs.
      const fallbackSpace = info !== undefined && info.maxId <= FALLBACK_FLOOR;
      const fallbackView = fallbackSpace && tag !== undefined ? await (await import('../app/audit.js')).fallbackLeases(o, tag) : undefined;
      const fallback = fallbackSpace
        ? new FallbackIds({ nowMs: Date.now(), held: fallbackView && ((w, ms) => fallbackView.index.held(w, ms)) })
        : undefined;
      const analysis = new AuditAnalysis(
        layout === undefined
          ? { kind: 'segment', tag: tag as string }
          : { kind: 'snowflake', layout, nowMs: Date.now(), held: held && ((w, t) => held.held(w, t)) },
      );
      const above = info === undefined ? undefined : new AboveBound(info.maxId);
      const covered = ledger === undefined || tag === undefined ? undefined : await coverOf(ledger.segmentRangePages(tag));
      const cover = covered?.cover;
      const ledgerReach = covered?.reach;
      const foreign = cover === undefined ? undefined : new ForeignIds(cover.ranges());
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
      const report = buildReport(analysis, {
        tag,
        layout,
        info,
        above,
        foreign,
        fallback,
        segmentMax: segmentMax && halvesToBigInt(...segmentMax),
        fallbackChecked: fallbackView !== undefined,
        cover,
        hasLedger: ledger !== undefined,
        leasesChecked: held !== undefined,
        margin,
        timed,
        marks,
        marksBefore,
        ledgerReach,
        empty: sorter.total === 0,
        store: o.store,
        stateDir: o.stateDir?.[0],
        seconds: (performance.now() - startedAt) / 1000,
        runs: sorter.runCount,
      });
      if (o.json) console.log(JSON.stringify(report, null, 2));
      else printText(report);
      return report.clean ? 0 : 1;
    } finally {
      await ledger?.close();
    }
  } finally {
    sorter.cleanup();
  }
}

class Progress {
  private last = -Infinity;
  tick(n: number, fraction?: number): void {
    const now = performance.now();
    if (now - this.last < 200) return;
    this.last = now;
    const pct = fraction === undefined ? '' : ` ${(fraction * 100).toFixed(1)}%`;
    process.stderr.write(`\raudit: ${n.toLocaleString('en-US')} IDs read${pct}   `);
  }
  done(n: number): void {
    process.stderr.write(`\raudit: ${n.toLocaleString('en-US')} IDs read, sorting and checking…\n`);
  }
}

async function readText(
  file: string | undefined,
  csvColumn: string | undefined,
  sorter: IdSorter,
  progress: Progress | undefined,
): Promise<void> {
  const fromStdin = file === undefined || file === '-';
  let size: number | undefined;
  if (!fromStdin) {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(file);
    } catch (e) {
      throw new InvalidArgumentError(`cannot read ${JSON.stringify(file)}: ${fileProblem(e)}`);
    }
    if (st.isDirectory()) throw new InvalidArgumentError(`${JSON.stringify(file)} is a directory: give a file of IDs (or - for stdin)`);
    size = st.size;
  }
  const input = fromStdin ? process.stdin : createReadStream(file, { highWaterMark: 1 << 20 });
  let parser: LineParser | undefined = csvColumn === undefined ? new LineParser(sorter) : undefined;
  let head = Buffer.alloc(0);
  let read = 0;
  for await (const chunk of readable(input as AsyncIterable<Buffer>, fromStdin ? 'stdin' : JSON.stringify(file))) {
    read += chunk.length;
    if (parser === undefined) {
      // A CSV column: the first line decides the column (a name) and whether it is a header.
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(10);
      if (nl < 0) continue;
      parser = csvParser(head.subarray(0, nl).toString('utf8'), csvColumn as string, sorter);
      parser.push(head);
      head = Buffer.alloc(0);
    } else parser.push(chunk);
    progress?.tick(sorter.total, size ? read / size : undefined);
  }
  if (parser === undefined) {
    if (head.length === 0) return;
    parser = csvParser(head.toString('utf8'), csvColumn as string, sorter);
    parser.push(head);
  }
  parser.end();
}

/** A file-system failure in words, without the errno text. */
function fileProblem(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'ENOTDIR') return 'a part of the path is not a directory';
  if (code === 'EIO') return 'an input/output error of the device';
  return 'it cannot be read';
}

/** The input's chunks; a failure while reading them (a file that cannot be read after all) as a bad input, in words. */
async function* readable(input: AsyncIterable<Buffer>, what: string): AsyncGenerator<Buffer> {
  const it = input[Symbol.asyncIterator]();
  for (;;) {
    let r: IteratorResult<Buffer>;
    try {
      r = await it.next();
    } catch (e) {
      throw new InvalidArgumentError(`cannot read ${what}: ${fileProblem(e)}`);
    }
    if (r.done === true) return;
    yield r.value;
  }
}

function csvParser(firstLine: string, column: string, sorter: IdSorter): LineParser {
  const fields = firstLine
    .replace(/\r$/, '')
    .split(',')
    .map((f) => f.trim().replace(/^"(.*)"$/, '$1'));
  if (/^[0-9]+$/.test(column)) {
    const n = Number(column);
    if (n < 1) throw new InvalidArgumentError('--csv-column: columns are numbered from 1');
    const first = fields[n - 1];
    return new LineParser(sorter, n - 1, first !== undefined && !/^[0-9]+$/.test(first));
  }
  const i = fields.indexOf(column);
  if (i < 0) throw new InvalidArgumentError(`--csv-column: no column ${JSON.stringify(column)} in the header (${fields.join(', ')})`);
  return new LineParser(sorter, i, true);
}

async function readDb(
  url: string,
  query: string,
  sorter: IdSorter,
  progress: Progress | undefined,
  timeColumn: string | undefined,
  timed: IssuedBeforeRecorded | undefined,
): Promise<void> {
  const { openIdSource } = await import('../app/audit.js');
  const source = await openIdSource(url, query, timeColumn);
  let row = 0;
  try {
    await source.stream((values, times) => {
      for (let i = 0; i < values.length; i++) {
        const v = values[i] as string | null;
        row++;
        if (v === null || !/^[0-9]{1,19}$/.test(v))
          throw new InvalidArgumentError(`row ${row}: not an ID from 0 to 2^63-1: ${v === null ? 'NULL' : JSON.stringify(v.slice(0, 40))}`);
        const id = BigInt(v);
        if (id > 0x7fffffffffffffffn) throw new InvalidArgumentError(`row ${row}: ${v} is above 2^63-1`);
        sorter.add(id);
        const t = times?.[i];
        if (timed !== undefined && t !== undefined && t !== null) timed.add(id, t);
      }
      progress?.tick(sorter.total);
    });
  } finally {
    await source.close();
  }
}

interface ReportContext {
  tag: string | undefined;
  layout: Layout | undefined;
  info: { maxId: bigint; step: number; fenceEpoch: number } | undefined;
  above: AboveBound | undefined;
  foreign: ForeignIds | undefined;
  cover: RangeCover | undefined;
  hasLedger: boolean;
  margin: number | undefined;
  /** With --time-column: the rows older than the range that holds their ID. */
  timed: IssuedBeforeRecorded | undefined;
  /** The marks of the tag in the state dirs given (--state-dir), read after the store, and the same read before it. */
  marks: readonly ServerMark[];
  marksBefore: readonly ServerMark[];
  ledgerReach: LedgerReach | undefined;
  /** No ID was read (--allow-empty). */
  empty: boolean;
  leasesChecked: boolean;
  fallback: FallbackIds | undefined;
  fallbackChecked: boolean;
  /** With a fallback space: the highest ID below it, for the gap rate. */
  segmentMax: bigint | undefined;
  store: string | undefined;
  stateDir: string | undefined;
  seconds: number;
  runs: number;
}

type Report = ReturnType<typeof buildReport>;

const shellWord = (s: string): string => (/^[A-Za-z0-9_.:/@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function fenceCommand(tag: string, to: bigint, store: string | undefined, stateDir: string | undefined): string {
  const words = ['sequoia', 'fence', tag, '--to', to.toString()];
  const s = store ?? process.env.SEQUOIA_STORE;
  if (s !== undefined) words.push('--store', s);
  const d = stateDir ?? process.env.SEQUOIA_STATE_DIR;
  if (d !== undefined) words.push('--state-dir', d);
  return words.map(shellWord).join(' ');
}

/** Whether a server with this mark refuses the tag as the store has it now (core/segment/rollback-guard.ts's rule). */
function refuses(m: ServerMark, info: { maxId: bigint; fenceEpoch: number }): boolean {
  if (m.mark === null) return false;
  const tripped = m.mark.trippedAtEpoch !== undefined && info.fenceEpoch <= m.mark.trippedAtEpoch;
  return tripped || m.mark.mark > info.maxId;
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
  for (const m of [...c.marks, ...c.marksBefore]) if (m.mark !== null) raise(m.mark.mark - 1n);
  const largest =
    c.ledgerReach !== undefined && c.ledgerReach.largestRange > BigInt(info.step) ? c.ledgerReach.largestRange : BigInt(info.step);
  const margin = c.margin !== undefined ? BigInt(c.margin) : 10n * largest;
  const to = top + 1n + margin;
  return { to: to.toString(), command: fenceCommand(tag, to, c.store, c.stateDir) };
}

function buildReport(a: AuditAnalysis, c: ReportContext) {
  const findings: Array<{
    kind: string;
    count: number;
    message: string;
    examples: readonly string[];
    fence?: { to: string; command: string };
    ledger?: Array<{ id: string; count: number; entries: readonly string[] }>;
  }> = [];
  if (a.duplicateIds > 0) {
    findings.push({
      kind: 'duplicates',
      count: a.duplicateIds,
      message: `${a.duplicateIds} IDs occur more than once (${a.duplicateExtra} extra rows)`,
      examples: a.duplicates.map((d) => `${d.id} ×${d.count}`),
      ...(c.hasLedger ? { ledger: a.duplicates.map((d) => ({ id: d.id, count: d.count, entries: d.ledger ?? [] })) } : {}),
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
  const refusing =
    c.info === undefined
      ? []
      : c.marks.filter((m, i) => {
          const info = c.info as NonNullable<typeof c.info>;
          const before = c.marksBefore[i];
          return refuses(m, info) && before !== undefined && refuses(before, info);
        });
  const fence = c.info !== undefined && c.tag !== undefined ? proposeFence(c, c.tag, c.info) : undefined;
  if (c.above !== undefined && c.above.count > 0 && c.info !== undefined && fence !== undefined) {
    const unread =
      c.marks.length > 0
        ? ''
        : ` A server that kept its marks refuses the tag until a fence clears its high-water mark (its STORE_ROLLBACK_DETECTED names it): ` +
          `this one clears marks up to ${fence.to}; give audit each server's --state-dir to check theirs.`;
    findings.push({
      kind: 'above-store-max',
      count: c.above.count,
      message:
        `${c.above.count} IDs are at or above the store's max_id ${c.info.maxId} (highest ${c.above.highest}): the store went back, ` +
        `probably restored from an old backup, and would hand these IDs out again. Make it safe: ${fence.command}.${unread}`,
      examples: c.above.examples,
      fence,
    });
  }
  if (refusing.length > 0 && c.info !== undefined && fence !== undefined) {
    const info = c.info;
    findings.push({
      kind: 'refused-by-server-marks',
      count: refusing.length,
      message:
        `${refusing.length} of the ${c.marks.length} servers whose state dir was given refuse tag ${c.tag} (STORE_ROLLBACK_DETECTED) ` +
        `until a fence clears their high-water mark: the store went back below IDs they handed out. Make it safe: ${fence.command}`,
      examples: refusing.map((m) => describeRefusal(m, info)),
      fence,
    });
  }
  const tb = c.timed;
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
  if (a.outsideLayout > 0) {
    findings.push({
      kind: 'outside-layout',
      count: a.outsideLayout,
      message: `${a.outsideLayout} IDs do not fit layout ${c.layout?.name} (their time field is beyond its last tick ${c.layout?.maxTick}): another generator or layout made them`,
      examples: a.outsideLayoutExamples,
    });
  }
  if (a.future > 0) {
    findings.push({
      kind: 'future',
      count: a.future,
      message: `${a.future} IDs carry a time more than ${FUTURE_SLACK_MS / 1000} s ahead of this machine's clock: a clock ran ahead when they were made, or another layout made them`,
      examples: a.futureExamples,
    });
  }
  const fb = c.fallback;
  if (fb !== undefined && fb.future > 0) {
    findings.push({
      kind: 'future',
      count: fb.future,
      message: `${fb.future} fallback IDs carry a time more than ${FUTURE_SLACK_MS / 1000} s ahead of this machine's clock: a client's clock ran ahead, or another generator made them`,
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
  const notChecked: string[] = [];
  if (c.tag !== undefined && !c.hasLedger) notChecked.push(NO_SEGMENT_LEDGER);
  if (c.layout !== undefined && !c.leasesChecked) notChecked.push(NO_LEASE_LEDGER);
  if (fb !== undefined && fb.count > 0 && !c.fallbackChecked) notChecked.push(NO_FALLBACK_LEASES);
  if (c.empty) notChecked.push('0 IDs read (--allow-empty): no ID was checked');
  if (tb !== undefined && tb.checked < a.count)
    notChecked.push(`${a.count - tb.checked} rows have no time (NULL in --time-column): not checked for issued-before-recorded`);
  if (c.foreign !== undefined && c.foreign.beforeLedger > 0) {
    notChecked.push(
      `${c.foreign.beforeLedger} IDs lie below the ledger's first range (issued before the ledger began, or their rows were pruned): not checked for foreign IDs`,
    );
  }
  return {
    clean: findings.length === 0,
    target: c.tag !== undefined ? { tag: c.tag } : { layout: c.layout?.name },
    summary: {
      count: a.count,
      distinct: a.distinct,
      min: a.min?.toString() ?? null,
      max: a.max?.toString() ?? null,
      ...(c.info !== undefined ? { storeMaxId: c.info.maxId.toString(), fenceEpoch: c.info.fenceEpoch } : {}),
      ...(c.tag !== undefined ? { gapRate: a.gapRate(fb && { max: c.segmentMax, excluded: fb.distinct }) } : {}),
      ...(fb !== undefined && fb.count > 0
        ? {
            fallback: {
              count: fb.count,
              distinct: fb.distinct,
              min: fb.min?.toString() ?? null,
              max: fb.max?.toString() ?? null,
              workerIds: fb.workerIds.size,
              first: new Date(fb.firstMs as number).toISOString(),
              last: new Date(fb.lastMs as number).toISOString(),
            },
          }
        : {}),
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
      ...(c.layout !== undefined ? { perDay: a.perDayCounts() } : {}),
      seconds: Math.round(c.seconds * 1000) / 1000,
      spilledRuns: c.runs,
    },
    findings,
    notChecked,
  };
}

function printText(r: Report): void {
  const s = r.summary;
  const out: string[] = [];
  out.push(
    `audit of ${'tag' in r.target ? `tag ${r.target.tag}` : `layout ${r.target.layout}`}: ${s.count} IDs, ${s.distinct} distinct, min ${s.min ?? '-'}, max ${s.max ?? '-'}`,
  );
  if ('storeMaxId' in s) out.push(`store: max_id ${s.storeMaxId} (the next range starts there), fence epoch ${s.fenceEpoch}`);
  if ('gapRate' in s && s.gapRate !== null && s.gapRate !== undefined)
    out.push(`gap rate: ${(s.gapRate * 100).toFixed(2)}% of [min, max] is not in the input`);
  if ('fallback' in s && s.fallback !== undefined) {
    const f = s.fallback;
    out.push(
      `fallback IDs (from 2^62, issued by clients while no server answered): ${f.count}, ${f.distinct} distinct, min ${f.min}, max ${f.max}, ${f.workerIds} worker ids, from ${f.first} to ${f.last}`,
    );
  }
  if ('perDay' in s && s.perDay !== undefined) for (const d of s.perDay) out.push(`  ${d.day}  ${d.count}`);
  if (r.findings.length === 0) out.push(s.count === 0 ? '0 IDs read: nothing was checked (--allow-empty)' : 'clean: no findings');
  for (const f of r.findings) {
    out.push(`FINDING ${f.kind}: ${f.message}`);
    if (f.ledger !== undefined) {
      for (const d of f.ledger.slice(0, 20)) {
        out.push(`  ${d.id} ×${d.count}${d.entries.length === 0 ? ': covered by no range in the ledger' : ''}`);
        for (const e of d.entries) out.push(`    ${e}`);
      }
    } else for (const e of f.examples.slice(0, 20)) out.push(`  ${e}`);
    if (f.examples.length > 20 || f.count > f.examples.length) out.push(`  … (--json lists up to ${f.examples.length})`);
    if (f.fence) out.push(`  run: ${f.fence.command}`);
  }
  for (const n of r.notChecked) out.push(`not checked: ${n}`);
  console.log(out.join('\n'));
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
