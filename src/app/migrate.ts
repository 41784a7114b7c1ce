/**
 * `sequoia migrate`: copies the tags of a Leaf (`leaf_alloc`) or Tinyid
 * (`tiny_id_info`) table into any Sequoia store, each starting a safety
 * margin above where the old table's next range would start. Idempotent: a
 * tag already at or above its bound is left alone, one below it is fenced up
 * to it (the fence raises, never lowers, and bumps the epoch), a missing one
 * is created there. Run it again while old servers still allocate and it
 * raises the tags again; it never moves one down.
 */
import { InvalidArgumentError } from '../core/errors.js';
import { MAX_ID } from '../core/id.js';
import { MAX_STORED_STEP } from '../core/validate.js';
import type { SegmentStore, TagInfo } from '../ports/segment-store.js';
import { createStore, redactStoreUrl, storeIdentity } from './stores.js';

/** One maximum dynamic step of Leaf (MAX_STEP): what a Leaf server may hold beyond max_id in its second buffer is below it. */
export const DEFAULT_MIGRATE_MARGIN = 1_000_000n;

export type MigrateAction = 'create' | 'raise' | 'keep';

export interface MigrateStep {
  readonly tag: string;
  /** Where the source's next range would start. */
  readonly sourceNext: bigint;
  readonly step: number;
  /** The start the target tag must be at or above: sourceNext + margin. */
  readonly bound: bigint;
  readonly action: MigrateAction;
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

export async function migrate(o: MigrateOptions): Promise<MigrateStep[]> {
  sourceSchema(o.from);
  const margin = o.margin ?? DEFAULT_MIGRATE_MARGIN;
  if (margin < 0n) throw new InvalidArgumentError('--margin must be a whole number from 0');
  if (storeIdentity(o.from) === storeIdentity(o.to)) throw new InvalidArgumentError('--from and --store name the same table');
  const source = await createStore(o.from);
  let target: SegmentStore | undefined;
  try {
    await source.init();
    const all = await source.listTags();
    const wanted = o.tags && o.tags.length > 0 ? new Set(o.tags) : undefined;
    if (wanted) {
      const missing = [...wanted].filter((t) => !all.some((x) => x.tag === t));
      if (missing.length > 0) throw new InvalidArgumentError(`--tag: not in the source table: ${missing.join(', ')}`);
    }
    const tags = wanted ? all.filter((t) => wanted.has(t.tag)) : all;
    target = await createStore(o.to);
    await target.init();
    const steps: MigrateStep[] = [];
    for (const t of tags) steps.push(await migrateTag(source, target, t, margin, o.dryRun ?? false));
    return steps;
  } finally {
    await source.close().catch(() => {});
    await target?.close().catch(() => {});
  }
}

async function migrateTag(source: SegmentStore, target: SegmentStore, t: TagInfo, margin: bigint, dryRun: boolean): Promise<MigrateStep> {
  const step = Math.min(Math.max(1, t.step), MAX_STORED_STEP);
  // The source's state is read again just before the write: an old server may have allocated since the listing.
  const fresh = (await source.getTag(t.tag)) ?? t;
  const sourceNext = fresh.maxId > t.maxId ? fresh.maxId : t.maxId;
  const need = sourceNext + margin;
  if (need > MAX_ID) throw new InvalidArgumentError(`tag ${JSON.stringify(t.tag)}: ${sourceNext} + margin ${margin} passes 2^63-1`);
  const before = await target.getTag(t.tag);
  const action: MigrateAction = !before ? 'create' : before.maxId >= need ? 'keep' : 'raise';
  const base = { tag: t.tag, sourceNext, step, bound: need, action, targetBefore: before?.maxId };
  if (dryRun || action === 'keep') return before && action === 'keep' ? { ...base, after: before } : base;
  const after =
    action === 'create'
      ? await target.createTag({ tag: t.tag, step, start: need, description: fresh.description || undefined })
      : await target.fence(t.tag, need);
  return { ...base, after };
}
