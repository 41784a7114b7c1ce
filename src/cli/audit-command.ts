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
import { IssuedBeforeRecorded, type RecordedRange } from '../service/audit/audit-analysis.js';
import { type AuditInputs, type AuditReport, NO_SEGMENT_LEDGER, checkIds } from '../service/audit/audit-report.js';
import { IdSorter, LineParser, addDecimal } from '../service/audit/id-sort.js';
import { HoldingIndex } from '../core/snowflake/holding-index.js';

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

/** The flags that go together, checked before anything is read. */
function checkFlags(file: string | undefined, o: AuditOpts): void {
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
}

async function runAudit(file: string | undefined, o: AuditOpts): Promise<number> {
  checkFlags(file, o);
  const tag = o.tag === undefined ? undefined : assertTag(o.tag);
  const layout = o.layout === undefined ? undefined : await resolveLayout(o.layout, o.config);
  const margin = positive('--fence-margin', o.fenceMargin);
  const timeMargin = wholeFromZero('--time-margin-ms', o.timeMarginMs, TIME_MARGIN_MS);
  checkTmpDir(o.tmpDir);
  const sorter = new IdSorter({ chunkIds: positive('--chunk-ids', o.chunkIds), tmpDir: o.tmpDir });
  const startedAt = performance.now();
  try {
    const timed = await readInput(file, o, tag, timeMargin, sorter);
    const view = await storeView(o, tag, layout);
    try {
      const report = await checkIds(sorter, { ...view, timed, margin, nowMs: Date.now() }, () => (performance.now() - startedAt) / 1000);
      if (o.json) console.log(JSON.stringify(report, null, 2));
      else printText(report);
      return report.clean ? 0 : 1;
    } finally {
      await view.ledger?.close();
    }
  } finally {
    sorter.cleanup();
  }
}

/** Reads the IDs into the sorter (and, with --time-column, checks each row's time as it streams). */
async function readInput(
  file: string | undefined,
  o: AuditOpts,
  tag: string | undefined,
  timeMargin: number,
  sorter: IdSorter,
): Promise<IssuedBeforeRecorded | undefined> {
  const progress = o.progress !== false && process.stderr.isTTY === true ? new Progress() : undefined;
  // The time check's ranges are read before the input (the rows are checked as they stream): a range
  // recorded after this read holds no row older than it yet, and is read again for the other checks.
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
  return timed;
}

type StoreView = Omit<AuditInputs, 'timed' | 'margin' | 'nowMs'> & {
  readonly ledger: (AuditInputs['ledger'] & { close(): Promise<void> }) | undefined;
};

/** What the store, the state dirs and the lease ledger say now, read after the input; the caller closes the ledger. */
async function storeView(o: AuditOpts, tag: string | undefined, layout: Layout | undefined): Promise<StoreView> {
  const app = await import('../app/audit.js');
  // The marks are read before and after the store: a server's mark is recorded after the store answered, so a
  // healthy server's mark read before is never above max_id read after, and one a give-back lowered while the
  // store was read is below it after. A server refuses only if both readings say so.
  const readMarks = () => (tag === undefined || o.stateDir === undefined ? [] : app.serverMarks(o.stateDir, o.store, tag));
  const marksBefore = readMarks();
  // The store is read after the input: every ID in it was issued from a range the store had already given out.
  const info = tag === undefined ? undefined : await app.storeTag(o, tag);
  const marks = readMarks();
  // Read after the input too: a holder's horizon is in the ledger before it issues an ID under it.
  const leases = layout !== undefined && o.store !== undefined ? await leaseIndex(o.store, layout) : undefined;
  const ledger = tag === undefined ? undefined : await app.openAuditLedger({ store: o.store });
  const fallbackLeases =
    tag === undefined
      ? undefined
      : async () => {
          const v = await app.fallbackLeases(o, tag);
          return v && { held: (w: number, ms: number) => v.index.held(w, ms), holders: v.holders };
        };
  return {
    tag,
    layout,
    info,
    held: leases && ((w, t) => leases.held(w, t)),
    ledger,
    fallbackLeases,
    marks,
    marksBefore,
    store: o.store ?? process.env.SEQUOIA_STORE,
    stateDir: o.stateDir?.[0] ?? process.env.SEQUOIA_STATE_DIR,
  };
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
  try {
    if (source.streamText !== undefined && timeColumn === undefined) {
      // The same byte parser as a file's: no string or BigInt per row.
      const parser = new LineParser(sorter, 0, false, 'copy');
      await source.streamText((chunk) => {
        parser.push(chunk);
        progress?.tick(sorter.total);
      });
      parser.end();
      return;
    }
    let row = 0;
    await source.stream((values, times) => {
      for (let i = 0; i < values.length; i++) {
        const v = values[i] as string | null;
        row++;
        if (v === null || !addDecimal(sorter, v))
          throw new InvalidArgumentError(`row ${row}: not an ID from 0 to 2^63-1: ${v === null ? 'NULL' : JSON.stringify(v.slice(0, 40))}`);
        const t = timed === undefined ? undefined : times?.[i];
        if (t !== undefined && t !== null) timed?.add(BigInt(v), t);
      }
      progress?.tick(sorter.total);
    });
  } finally {
    await source.close();
  }
}

function printText(r: AuditReport): void {
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
