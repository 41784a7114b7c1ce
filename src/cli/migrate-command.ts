/**
 * `sequoia migrate --from URL [--store URL] [--margin N] [--tag T]… [--keep-source] [--state-dir DIR] [--dry-run]`:
 * the tags of a Leaf or Tinyid table copied into a Sequoia store, each a
 * margin above the old table's next range, the old rows retired (see
 * app/migrate.ts); with --state-dir, a server's state dir moved to the new store.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../core/errors.js';
import { DEFAULT_STORE_URL } from '../app/defaults.js';
import type { MigrateStep, StateDirMove } from '../app/migrate.js';

interface MigrateOpts {
  from: string;
  store?: string;
  margin?: string;
  tag: string[];
  keepSource?: boolean;
  stateDir?: string;
  dryRun?: boolean;
  json?: boolean;
}

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'copy the tags of a Leaf (leaf_alloc) or Tinyid (tiny_id_info) table into a Sequoia store, above the old maximum, and retire the old rows (renamed TAG#sequoia-retired: an old server still running fails its next load instead of repeating IDs)',
    )
    .requiredOption(
      '--from <url>',
      'the old table: postgres://… or mysql://… with ?schema=leaf or ?schema=tinyid (and &table=NAME if renamed)',
    )
    .option('--store <url>', `the Sequoia store to copy into (env SEQUOIA_STORE; default ${DEFAULT_STORE_URL} where it exists)`)
    .option('--margin <n>', 'IDs left free above the old next ID, for what old servers and clients still hold (default 1000000)')
    .option('--tag <tag>', 'copy only this tag (repeatable; default every tag)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option(
      '--keep-source',
      'leave the old rows where the old servers find them (they keep allocating: the copy stays ahead only by the margin)',
    )
    .option(
      '--state-dir <dir>',
      "a stopped server's state dir, moved to the new store with its high-water marks (each tag starts above them too)",
    )
    .option('--dry-run', 'print what would be done, change nothing')
    .option('--json', 'print JSON (the state dir line goes to stderr)')
    .action(async (o: MigrateOpts) => {
      if (o.margin !== undefined && !/^[0-9]{1,18}$/.test(o.margin)) {
        throw new InvalidArgumentError(`--margin must be a whole number from 0, got ${JSON.stringify(o.margin)}`);
      }
      const { assertTag } = await import('../core/validate.js');
      for (const t of o.tag) assertTag(t, '--tag');
      const { resolveCommandConfig } = await import('../app/command-config.js');
      const store = resolveCommandConfig({ store: o.store }, { stateDir: false }).store;
      const { migrate } = await import('../app/migrate.js');
      const dryRun = o.dryRun ?? false;
      const { steps, stateDir } = await migrate({
        from: o.from,
        to: store,
        margin: o.margin === undefined ? undefined : BigInt(o.margin),
        tags: o.tag,
        dryRun,
        keepSource: o.keepSource ?? false,
        ...(o.stateDir !== undefined ? { stateDir: o.stateDir } : {}),
      });
      if (o.json) {
        console.log(JSON.stringify(steps.map(jsonOf), null, 2));
        if (stateDir) console.error(stateDirLine(stateDir));
        return;
      }
      if (steps.length === 0) console.log('the source table has no tags');
      for (const s of steps) console.log(lineOf(s, dryRun));
      if (stateDir) console.log(stateDirLine(stateDir));
    });
}

function lineOf(s: MigrateStep, dryRun: boolean): string {
  const moved = s.movedFrom === undefined ? '' : ` (moved from ${s.movedFrom} while migrate ran: an old server allocated)`;
  const mark = s.markFloor === undefined ? '' : `, state dir mark ${s.markFloor}`;
  const read = `${s.tag}: source next ID ${s.sourceNext}${moved}${mark}, step ${s.step}`;
  return `${read}; ${targetPart(s, dryRun)}; ${sourcePart(s, dryRun)}`;
}

function targetPart(s: MigrateStep, dryRun: boolean): string {
  if (s.action === 'keep') return `target already at ${s.targetBefore} >= ${s.bound}, unchanged`;
  const verb =
    s.action === 'create'
      ? dryRun
        ? 'would create at'
        : 'created at'
      : dryRun
        ? `would raise from ${s.targetBefore} to`
        : `raised from ${s.targetBefore} to`;
  const after = s.after ? ` (next ID ${s.after.maxId}, fence epoch ${s.after.fenceEpoch})` : '';
  return `${verb} ${s.bound}${after}`;
}

function sourcePart(s: MigrateStep, dryRun: boolean): string {
  if (s.source === 'keep') return 'source row kept (--keep-source: old servers still allocate from it)';
  if (s.source === 'retired-earlier') return `source row retired earlier (as ${s.retiredAs})`;
  return `${dryRun ? 'would retire source row' : 'source row retired'} (as ${s.retiredAs})`;
}

function stateDirLine(d: StateDirMove): string {
  if (d.outcome === 'would-rebind') return `state dir ${d.path}: would move to store ${d.to}, high-water marks kept`;
  if (d.outcome === 'bound') return `state dir ${d.path}: already bound to store ${d.to}`;
  return `state dir ${d.path}: moved to store ${d.to}, high-water marks kept`;
}

function jsonOf(s: MigrateStep): Record<string, unknown> {
  return {
    tag: s.tag,
    sourceNext: s.sourceNext.toString(),
    step: s.step,
    bound: s.bound.toString(),
    action: s.action,
    targetBefore: s.targetBefore?.toString() ?? null,
    targetAfter: s.after?.maxId.toString() ?? null,
    source: s.source,
    retiredAs: s.retiredAs ?? null,
    movedFrom: s.movedFrom?.toString() ?? null,
    markFloor: s.markFloor?.toString() ?? null,
  };
}
