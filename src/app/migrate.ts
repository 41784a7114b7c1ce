/**
 * `sequoia migrate`: copies the tags of a Leaf (`leaf_alloc`) or Tinyid
 * (`tiny_id_info`) table into any Sequoia store, each starting a safety
 * margin above where the old table's next range would start, and retires
 * the old row so that no old server can take another range from it.
 *
 * Retiring renames the row (`order` becomes `order#sequoia-retired`) under
 * its lock, which every allocator of the old table takes: the row read there
 * is the last any of them moved, and after the rename their next load finds
 * no row and fails (Leaf: no row after its UPDATE; Tinyid: "can not find
 * biztype"), loudly, instead of taking a range the new store hands out too.
 * The retired row keeps its max_id: a later run reads it there and changes
 * nothing. `--keep-source` leaves the row for teams that run the old servers
 * beside the copy on purpose; the copy is then only as far ahead as the
 * margin, and a row that moves while migrate runs is read again (never
 * reported as copied while it moved).
 *
 * Idempotent: a tag already at or above its bound is left alone, one below it
 * is fenced up to it (the fence raises, never lowers, and bumps the epoch), a
 * missing one is created there. With `--state-dir`, a server's state dir
 * moves to the new store with its marks (each tag starts above them too).
 */
import { InvalidArgumentError, SequoiaError, UnavailableError } from '../core/errors.js';
import { MAX_ID } from '../core/id.js';
import { assertTag, MAX_STORED_STEP } from '../core/validate.js';
import type { RetiringStore, SegmentStore, TagInfo } from '../ports/segment-store.js';
import { type MigratingStateDir, openStateDirForMigration } from './state-dir-claim.js';
import { createStore, redactStoreUrl, storeIdentity } from './stores.js';

/** One maximum dynamic step of Leaf (MAX_STEP): what a Leaf server may hold beyond max_id in its second buffer is below it. */
export const DEFAULT_MIGRATE_MARGIN = 1_000_000n;

/** What a retired row is renamed to: '#' is not legal in Sequoia's tags, so no tag of the copy has this name. */
export const RETIRED_SUFFIX = '#sequoia-retired';

export function retiredName(tag: string): string {
  return `${tag}${RETIRED_SUFFIX}`;
}

/** A row moving while migrate reads it (`--keep-source`): read again this many times, then refused. */
const KEEP_SOURCE_READS = 3;

export type MigrateAction = 'create' | 'raise' | 'keep';
/** `retire`: retired by this run (or would be, on a dry run); `retired-earlier`: by an earlier run; `keep`: `--keep-source`. */
export type SourceAction = 'retire' | 'retired-earlier' | 'keep';

export interface MigrateStep {
  readonly tag: string;
  /** Where the source's next range would start, as last read (under the row's lock when retired by this run). */
  readonly sourceNext: bigint;
  /** As the first read found it, when the row moved since (an old server allocated while migrate ran). */
  readonly movedFrom?: bigint;
  /** The state dir's high-water mark of the tag, when above the source's next ID. */
  readonly markFloor?: bigint;
  readonly step: number;
  /** The start the target tag must be at or above: the higher of sourceNext and the mark, plus the margin. */
  readonly bound: bigint;
  readonly action: MigrateAction;
  readonly source: SourceAction;
  /** The retired row's name, when the source row is (or would be) retired. */
  readonly retiredAs?: string;
  /** The target's next ID before (undefined when it has no such tag). */
  readonly targetBefore: bigint | undefined;
  /** The target tag after (undefined on a dry run). */
  readonly after?: TagInfo;
}

export interface MigrateOptions {
  readonly from: string;
  readonly to: string;
  readonly margin?: bigint;
  readonly tags?: readonly string[];
  readonly dryRun?: boolean;
  /** Leave the source rows where the old servers find them. */
  readonly keepSource?: boolean;
  /** A server's state dir, moved to the new store (its marks kept). */
  readonly stateDir?: string;
}

export interface StateDirMove {
  readonly path: string;
  /** `rebound`: was the old store's (or no store's); `bound`: already the new store's; dry run: `would-rebind`. */
  readonly outcome: 'rebound' | 'bound' | 'would-rebind';
  readonly to: string;
}

export interface MigrateResult {
  readonly steps: MigrateStep[];
  readonly stateDir?: StateDirMove;
}

/** The source's kind from its URL: only Leaf's and Tinyid's tables are sources. */
export function sourceSchema(url: string): 'leaf' | 'tinyid' {
  let schema: string | null = null;
  let sql = false;
  try {
    const u = new URL(url);
    schema = u.searchParams.get('schema');
    // Leaf's and Tinyid's tables live in SQL databases; a sqlite: or redis: URL would be taken for a Sequoia store of its own.
    sql = ['postgres:', 'postgresql:', 'mysql:'].includes(u.protocol);
  } catch {
    // not a URL: refused below
  }
  if (!sql || (schema !== 'leaf' && schema !== 'tinyid')) {
    throw new InvalidArgumentError(
      `--from must name a Leaf or Tinyid table: a postgres:// or mysql:// URL with ?schema=leaf or ?schema=tinyid (got ${JSON.stringify(redactStoreUrl(url))})`,
    );
  }
  return schema;
}

/** A store's table as far as `--from` and `--store` may not name the same one: its place, and which schema's table. */
function tableIdentity(url: string): string {
  let schema = 'sequoia';
  try {
    schema = new URL(url).searchParams.get('schema') ?? schema;
  } catch {
    // not a URL: its identity alone
  }
  return `${storeIdentity(url)} schema=${schema}`;
}

function isRetiring(s: SegmentStore): s is SegmentStore & RetiringStore {
  return typeof (s as Partial<RetiringStore>).retireTag === 'function';
}

/** The source's rows by the tag they serve: the live one and the one an earlier run retired. */
export interface SourceTag {
  readonly tag: string;
  readonly live?: TagInfo;
  readonly retired?: TagInfo;
}

function sourceTags(rows: readonly TagInfo[]): SourceTag[] {
  const byTag = new Map<string, { live?: TagInfo; retired?: TagInfo }>();
  for (const r of rows) {
    const retired = r.tag.endsWith(RETIRED_SUFFIX);
    const tag = retired ? r.tag.slice(0, -RETIRED_SUFFIX.length) : r.tag;
    const entry = byTag.get(tag) ?? {};
    if (retired) entry.retired = r;
    else entry.live = r;
    byTag.set(tag, entry);
  }
  return [...byTag].map(([tag, e]) => ({ tag, ...e }));
}

export async function migrate(o: MigrateOptions): Promise<MigrateResult> {
  sourceSchema(o.from);
  const margin = o.margin ?? DEFAULT_MIGRATE_MARGIN;
  if (margin < 0n) throw new InvalidArgumentError('--margin must be a whole number from 0');
  if (tableIdentity(o.from) === tableIdentity(o.to)) throw new InvalidArgumentError('--from and --store name the same table');
  const dryRun = o.dryRun ?? false;
  // The state dir first: a dir of a third store, or a server still running on it, is refused before anything is written.
  const dir = o.stateDir === undefined ? undefined : await openStateDirForMigration(o.stateDir, o.from, o.to, dryRun);
  const source = await createStore(o.from).catch(async (e: unknown) => {
    await dir?.release();
    throw e;
  });
  let target: SegmentStore | undefined;
  try {
    await source.init();
    if (!isRetiring(source)) throw new InvalidArgumentError('--from must name a Leaf or Tinyid table');
    const tags = await sourceTagsOf(source, o.tags);
    target = await createStore(o.to);
    await target.init();
    const run: TagRun = { source, target, margin, dryRun, keepSource: o.keepSource ?? false, marks: dir?.marks ?? new Map() };
    const copied = new Set(tags.map((t) => t.tag));
    // The marks of tags this run leaves alone are checked before anything is written: the dir could not move after it.
    if (dir && o.stateDir !== undefined) await checkMarks(dir, o.stateDir, target, copied);
    const steps = await migrateTags(run, tags);
    if (!dir || o.stateDir === undefined) return { steps };
    return { steps, stateDir: await moveStateDir(dir, o.stateDir, target, dryRun, copied) };
  } finally {
    await source.close().catch(() => {});
    await target?.close().catch(() => {});
    await dir?.release().catch(() => {});
  }
}

/** The source's tags to copy (all, or the ones named; a name the source lacks is refused). */
export async function sourceTagsOf(source: SegmentStore & RetiringStore, names: readonly string[] | undefined): Promise<SourceTag[]> {
  const all = sourceTags(await source.listTags());
  const wanted = names && names.length > 0 ? new Set(names) : undefined;
  if (!wanted) return all;
  const missing = [...wanted].filter((t) => !all.some((x) => x.tag === t));
  if (missing.length > 0) throw new InvalidArgumentError(`--tag: not in the source table: ${missing.join(', ')}`);
  return all.filter((t) => wanted.has(t.tag));
}

/**
 * The store-level steps of a run, on stores already open (the simulator
 * drives these with a simulated peer table while it keeps allocating).
 */
export async function migrateTags(run: TagRun, tags: readonly SourceTag[]): Promise<MigrateStep[]> {
  // Every tag checked before the first row is retired: a run refused halfway would leave some old servers failing and others not.
  for (const t of tags) precheck(run, t);
  const steps: MigrateStep[] = [];
  for (const t of tags) steps.push(await migrateTag(run, t));
  return steps;
}

export interface TagRun {
  readonly source: SegmentStore & RetiringStore;
  readonly target: SegmentStore;
  readonly margin: bigint;
  readonly dryRun: boolean;
  readonly keepSource: boolean;
  readonly marks: ReadonlyMap<string, bigint>;
}

const higher = (a: bigint, b: bigint | undefined) => (b !== undefined && b > a ? b : a);

/** The start the copy of `t` needs above `next`: the higher of it and the state dir's mark, plus the margin. */
function boundFor(r: TagRun, t: SourceTag): (next: bigint) => bigint {
  const mark = r.marks.get(t.tag);
  return (next) => {
    const need = higher(next, mark) + r.margin;
    if (need > MAX_ID)
      throw new InvalidArgumentError(`tag ${JSON.stringify(t.tag)}: ${higher(next, mark)} + margin ${r.margin} passes 2^63-1`);
    return need;
  };
}

const listedNext = (t: SourceTag): bigint => higher(t.live?.maxId ?? -1n, t.retired?.maxId);

/** What refuses a tag before anything is written. */
function precheck(r: TagRun, t: SourceTag): void {
  assertTag(t.tag, `tag ${JSON.stringify(t.tag)} of the source table`);
  boundFor(r, t)(listedNext(t));
  if (t.live && t.retired && !r.keepSource) {
    const name = retiredName(t.tag);
    throw new InvalidArgumentError(
      `tag ${JSON.stringify(t.tag)}: the source has both ${JSON.stringify(t.tag)} and ${JSON.stringify(name)}: the row was inserted again after an earlier migrate retired it. ` +
        'Old servers may have taken IDs from it: keep the row with the higher max_id (delete the other by hand) and run migrate again',
    );
  }
}

async function migrateTag(r: TagRun, t: SourceTag): Promise<MigrateStep> {
  const mark = r.marks.get(t.tag);
  const boundOf = boundFor(r, t);
  const listed = listedNext(t);
  const shown = t.live ?? (t.retired as TagInfo);
  const step = Math.min(Math.max(1, shown.step), MAX_STORED_STEP);
  const description = shown.description || undefined;
  const name = retiredName(t.tag);
  const source: SourceAction = t.live === undefined ? 'retired-earlier' : r.keepSource ? 'keep' : 'retire';
  const common = { tag: t.tag, step, source, ...(source === 'keep' ? {} : { retiredAs: name }) };
  const floor = (next: bigint) => (mark !== undefined && mark > next ? { markFloor: mark } : {});

  if (r.dryRun) {
    const before = await r.target.getTag(t.tag);
    const bound = boundOf(listed);
    const action: MigrateAction = !before ? 'create' : before.maxId >= bound ? 'keep' : 'raise';
    const kept = action === 'keep' && before ? { after: before } : {};
    return { ...common, sourceNext: listed, ...floor(listed), bound, action, targetBefore: before?.maxId, ...kept };
  }

  if (source === 'keep') return copyKeepingSource(r, t, common, boundOf, floor, description);

  let next = listed;
  if (source === 'retire') {
    // Under the row's lock: what any old server took up to now is in it, and nothing after.
    const locked = await r.source.retireTag(t.tag, name, (row) => void boundOf(higher(row.maxId, t.retired?.maxId)));
    next = locked.maxId;
  }
  const moved = next !== listed ? { movedFrom: listed } : {};
  try {
    const w = await write(r.target, t.tag, step, boundOf(next), description);
    return { ...common, sourceNext: next, ...moved, ...floor(next), bound: boundOf(next), ...w };
  } catch (e) {
    if (source !== 'retire') throw e;
    throw again(
      e,
      `tag ${JSON.stringify(t.tag)}: the source row is retired (as ${JSON.stringify(name)}, next ID ${next}) but the copy failed; run migrate again to finish it: `,
    );
  }
}

/**
 * `--keep-source`: the row stays where old servers take ranges from it. The
 * copy is written above the row as read, then the row is read again: when
 * it moved meanwhile, the copy is raised above the new read, up to
 * KEEP_SOURCE_READS reads; a row still moving then is refused, not reported.
 */
async function copyKeepingSource(
  r: TagRun,
  t: SourceTag,
  common: { tag: string; step: number; source: SourceAction },
  boundOf: (next: bigint) => bigint,
  floor: (next: bigint) => { markFloor?: bigint },
  description: string | undefined,
): Promise<MigrateStep> {
  const first = t.live?.maxId ?? 0n;
  // `seen`: the live row as last read (what must not have moved); `next` may be higher, from a row retired earlier.
  let seen = first;
  let next = higher(first, t.retired?.maxId);
  let targetBefore: bigint | undefined;
  for (let read = 0; read < KEEP_SOURCE_READS; read++) {
    const w = await write(r.target, t.tag, common.step, boundOf(next), description);
    if (read === 0) targetBefore = w.targetBefore;
    const now = (await r.source.getTag(t.tag))?.maxId;
    if (now === undefined) throw new InvalidArgumentError(`tag ${JSON.stringify(t.tag)}: the source row was deleted while migrate ran`);
    if (now === seen) {
      const moved = seen !== first ? { movedFrom: first } : {};
      const action: MigrateAction = read === 0 ? w.action : targetBefore === undefined ? 'create' : 'raise';
      return {
        ...common,
        sourceNext: next,
        ...moved,
        ...floor(next),
        bound: boundOf(next),
        action,
        targetBefore,
        ...(w.after ? { after: w.after } : {}),
      };
    }
    seen = now;
    next = higher(next, now);
  }
  throw new UnavailableError(
    'STORE_UNAVAILABLE',
    `tag ${JSON.stringify(t.tag)}: the source row kept moving while migrate ran (read ${KEEP_SOURCE_READS} times, last at next ID ${next}; the copy is at or above ${boundOf(next)} only if no server allocated since): old servers still allocate from it. Stop them, or run without --keep-source to retire the row`,
  );
}

/** The copy at or above `bound`: created there, fenced up to it, or left alone when already there. */
async function write(
  target: SegmentStore,
  tag: string,
  step: number,
  bound: bigint,
  description: string | undefined,
): Promise<{ action: MigrateAction; targetBefore: bigint | undefined; after?: TagInfo }> {
  const before = await target.getTag(tag);
  if (before && before.maxId >= bound) return { action: 'keep', targetBefore: before.maxId, after: before };
  if (!before)
    return { action: 'create', targetBefore: undefined, after: await target.createTag({ tag, step, start: bound, description }) };
  return { action: 'raise', targetBefore: before.maxId, after: await target.fence(tag, bound) };
}

/** The same error, its message prefixed (its code, and so the exit status, kept). */
function again(e: unknown, prefix: string): unknown {
  if (e instanceof SequoiaError) {
    e.message = `${prefix}${e.message}`;
    return e;
  }
  return new UnavailableError('STORE_UNAVAILABLE', `${prefix}${e instanceof Error ? e.message : String(e)}`, { cause: e });
}

/**
 * The state dir moves to the new store only when every mark is at or below
 * the new store's tag: a server started there then takes ranges above every
 * ID it handed out, which its rollback guard accepts.
 */
async function moveStateDir(
  dir: MigratingStateDir,
  path: string,
  target: SegmentStore,
  dryRun: boolean,
  copied: ReadonlySet<string>,
): Promise<StateDirMove> {
  // A dry run raised nothing: the copied tags' bounds include the marks.
  await checkMarks(dir, path, target, dryRun ? copied : new Set());
  if (dryRun) return { path, outcome: dir.bound === dir.to ? 'bound' : 'would-rebind', to: dir.to };
  return { path, outcome: await dir.rebind(), to: dir.to };
}

/** Every mark (but those of `skip`) at or below the new store's tag, else the dir cannot move. */
async function checkMarks(dir: MigratingStateDir, path: string, target: SegmentStore, skip: ReadonlySet<string>): Promise<void> {
  for (const [tag, mark] of dir.marks) {
    if (skip.has(tag)) continue;
    const now = await target.getTag(tag);
    if (now && now.maxId < mark) {
      throw new InvalidArgumentError(
        `--state-dir ${path}: tag ${JSON.stringify(tag)} of the new store starts at ${now.maxId}, below this dir's high-water mark ${mark}: migrate that tag too (or fence it above the mark) before moving the dir`,
      );
    }
  }
}
