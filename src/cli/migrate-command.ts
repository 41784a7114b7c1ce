/**
 * `sequoia migrate --from URL [--store URL] [--margin N] [--tag T]… [--dry-run]`:
 * the tags of a Leaf or Tinyid table copied into a Sequoia store, each a
 * margin above the old table's next range (see app/migrate.ts).
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../core/errors.js';
import { DEFAULT_STORE_URL } from '../app/defaults.js';
import type { MigrateStep } from '../app/migrate.js';

interface MigrateOpts {
  from: string;
  store?: string;
  margin?: string;
  tag: string[];
  dryRun?: boolean;
  json?: boolean;
}

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'copy the tags of a Leaf (leaf_alloc) or Tinyid (tiny_id_info) table into a Sequoia store, above the old maximum; stop the old servers first',
    )
    .requiredOption(
      '--from <url>',
      'the old table: postgres://… or mysql://… with ?schema=leaf or ?schema=tinyid (and &table=NAME if renamed)',
    )
    .option('--store <url>', `the Sequoia store to copy into (env SEQUOIA_STORE; default ${DEFAULT_STORE_URL} where it exists)`)
    .option('--margin <n>', 'IDs left free above the old next ID, for what old servers and clients still hold (default 1000000)')
    .option('--tag <tag>', 'copy only this tag (repeatable; default every tag)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--dry-run', 'print what would be done, change nothing')
    .option('--json', 'print JSON')
    .action(async (o: MigrateOpts) => {
      if (o.margin !== undefined && !/^[0-9]{1,18}$/.test(o.margin)) {
        throw new InvalidArgumentError(`--margin must be a whole number from 0, got ${JSON.stringify(o.margin)}`);
      }
      const { assertTag } = await import('../core/validate.js');
      for (const t of o.tag) assertTag(t, '--tag');
      const { resolveCommandConfig } = await import('../app/command-config.js');
      const store = resolveCommandConfig({ store: o.store }, { stateDir: false }).store;
      const { migrate } = await import('../app/migrate.js');
      const steps = await migrate({
        from: o.from,
        to: store,
        margin: o.margin === undefined ? undefined : BigInt(o.margin),
        tags: o.tag,
        dryRun: o.dryRun ?? false,
      });
      if (o.json) {
        console.log(JSON.stringify(steps.map(jsonOf), null, 2));
        return;
      }
      if (steps.length === 0) console.log('the source table has no tags');
      for (const s of steps) console.log(lineOf(s, o.dryRun ?? false));
    });
}

function lineOf(s: MigrateStep, dryRun: boolean): string {
  const read = `${s.tag}: source next ID ${s.sourceNext}, step ${s.step}`;
  if (s.action === 'keep') return `${read}; target already at ${s.targetBefore} >= ${s.bound}, unchanged`;
  const verb =
    s.action === 'create'
      ? dryRun
        ? 'would create at'
        : 'created at'
      : dryRun
        ? `would raise from ${s.targetBefore} to`
        : `raised from ${s.targetBefore} to`;
  const after = s.after ? ` (next ID ${s.after.maxId}, fence epoch ${s.after.fenceEpoch})` : '';
  return `${read}; ${verb} ${s.bound}${after}`;
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
  };
}
