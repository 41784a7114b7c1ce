/**
 * The `sequoia` command's table (main.ts answers `gen uuid` before loading
 * it). Bad input exits 2 with one message per problem; a store that cannot
 * be reached exits 1; success exits 0.
 */
import { type Command, Option } from 'commander';
import { InvalidArgumentError } from '../core/errors.js';
import { MAX_STORED_STEP, assertIdValue } from '../core/validate.js';
import type { IdService } from '../service/id-service.js';
import { DEFAULT_STATE_DIR, DEFAULT_STORE_URL } from '../app/defaults.js';
import { registerGenAndExplain } from './gen-explain.js';
import { registerPlan } from './snowflake-commands.js';
import { registerBenchPk } from './bench-pk-command.js';
import { registerAudit } from './audit-command.js';
import { registerMigrate } from './migrate-command.js';
import { newProgram, runProgram } from './program.js';
import { registerServe } from './serve-command.js';

const program = newProgram();
await registerServe(program);

interface StoreOpts {
  store?: string;
  stateDir?: string;
}

function storeOption(cmd: Command): Command {
  return cmd
    .option('--store <url>', `store URL (env SEQUOIA_STORE; default ${DEFAULT_STORE_URL} where it exists)`)
    .option('--state-dir <dir>', `local state directory (env SEQUOIA_STATE_DIR; default ${DEFAULT_STATE_DIR} where it exists)`);
}

/** The `tag` commands' options: they use no state dir, but scripts written when they took one still pass `--state-dir`. */
function tagStoreOption(cmd: Command): Command {
  return cmd
    .option('--store <url>', `store URL (env SEQUOIA_STORE; default ${DEFAULT_STORE_URL} where it exists)`)
    .addOption(new Option('--state-dir <dir>', 'ignored: tag commands use no state directory').hideHelp());
}

/**
 * A service for one-shot admin commands: no refresh timer, no HTTP. Only
 * `stateDir` commands (fence) open the state dir: the others never take a
 * range, so they have no marks to keep, and opening it would create `./data`
 * in whatever directory they run from (or fail there, blaming the store).
 */
async function withService<T>(opts: StoreOpts, fn: (s: IdService) => Promise<T>, o: { stateDir?: boolean } = {}): Promise<T> {
  // Loaded here, not at start-up: `sequoia gen uuid` never loads the config schema, a store or a driver.
  const [{ resolveCommandConfig }, { withIdService }] = await Promise.all([import('../app/command-config.js'), import('../app/wiring.js')]);
  if (!o.stateDir) return withIdService({ ...resolveCommandConfig({ store: opts.store }, { stateDir: false }), stateDir: null }, fn);
  const config = resolveCommandConfig({ store: opts.store, stateDir: opts.stateDir }, { stateDir: true });
  // The marks of the server whose state dir this is: refused when it belongs to another store.
  return withIdService(config, fn, { checkStateDir: true });
}

function parseIntArg(name: string, max: number) {
  return (v: string): number => {
    if (!/^[0-9]+$/.test(v) || Number(v) < 1 || Number(v) > max) {
      throw new InvalidArgumentError(`${name} must be an integer from 1 to ${max}, got ${JSON.stringify(v)}`);
    }
    return Number(v);
  };
}

const tag = program.command('tag').description('manage segment tags (works while servers run)');
tagStoreOption(tag.command('create <tag>').description('create a tag'))
  .option('--step <n>', 'minimum segment length (default 1000)', parseIntArg('--step', MAX_STORED_STEP))
  .option('--start <n>', 'the first ID (default 1)')
  .option('--description <text>', 'free text')
  .option('--above <url>', 'start above MAX(--column) of --table in this database (postgres://… or mysql://…)')
  .option('--table <name>', 'with --above: the table whose IDs the tag must stay above (name or schema.name)')
  .option('--column <name>', 'with --above: its ID column (default id)')
  .option('--margin <n>', 'with --above: IDs left free above the maximum, for rows inserted until clients switch (default 1000)')
  .action(
    async (
      name: string,
      o: StoreOpts & {
        step?: number;
        start?: string;
        description?: string;
        above?: string;
        table?: string;
        column?: string;
        margin?: string;
      },
    ) => {
      let start = o.start;
      if (o.above !== undefined || o.table !== undefined || o.column !== undefined || o.margin !== undefined) {
        if (o.above === undefined || o.table === undefined)
          throw new InvalidArgumentError('--table, --column and --margin go with --above URL --table NAME');
        if (o.start !== undefined) throw new InvalidArgumentError('--start and --above exclude each other');
        const margin = o.margin ?? '1000';
        if (!/^[0-9]{1,18}$/.test(margin))
          throw new InvalidArgumentError(`--margin must be a whole number from 0, got ${JSON.stringify(margin)}`);
        const column = o.column ?? 'id';
        const { readColumnMax } = await import('../app/column-max.js');
        const read = await readColumnMax(o.above, o.table, column);
        start = ((read.max ?? 0n) + 1n + BigInt(margin)).toString();
        console.log(
          read.max === undefined
            ? `read MAX(${column}) of ${o.table} at ${read.where}: the table is empty; starting at ${start} (margin ${margin})`
            : `read MAX(${column}) = ${read.max} of ${o.table} at ${read.where}; starting at ${start} (max + 1 + margin ${margin})`,
        );
      }
      const { belowHistory } = await import('../service/tag-history.js');
      const info = await withService(o, async (s) => {
        const history = await s.tagHistory(name);
        // An existing tag is TAG_EXISTS below, not a matter of where it starts.
        if (history.current === undefined) {
          const below = belowHistory(history, start === undefined ? undefined : assertIdValue(start, 'start'));
          // No --start is how a name gets re-created at 1 by mistake (its IDs then repeat); a start given is the operator's choice.
          if (below !== undefined && start === undefined)
            throw new InvalidArgumentError(`start: ${below}; or give --start explicitly to start lower on purpose`);
          if (below !== undefined) console.error(`sequoia: warning: ${below}`);
        }
        return s.createTag({ tag: name, step: o.step, start, description: o.description });
      });
      console.log(`created ${info.tag}: next ID ${info.maxId}, step ${info.step}`);
    },
  );
tagStoreOption(tag.command('list').description('list tags'))
  .option('--json', 'print JSON')
  .action(async (o: StoreOpts & { json?: boolean }) => {
    const tags = await withService(o, (s) => s.listTags());
    if (o.json) {
      console.log(
        JSON.stringify(
          tags.map((t) => ({ ...t, maxId: t.maxId.toString() })),
          null,
          2,
        ),
      );
      return;
    }
    // MAX_ID is the store's max_id: where the next range starts, not the next ID a running server hands out.
    console.log(['TAG', 'MAX_ID', 'STEP', 'DESCRIPTION'].join('\t'));
    for (const t of tags) console.log([t.tag, t.maxId.toString(), t.step, t.description].join('\t'));
  });
tagStoreOption(tag.command('update <tag>').description("change a tag's step or description"))
  .option('--step <n>', 'new minimum step', parseIntArg('--step', MAX_STORED_STEP))
  .option('--description <text>', 'new description')
  .action(async (name: string, o: StoreOpts & { step?: number; description?: string }) => {
    const info = await withService(o, (s) => s.updateTag(name, { step: o.step, description: o.description }));
    console.log(`updated ${info.tag}: step ${info.step}`);
  });
tagStoreOption(tag.command('delete <tag>').description('delete a tag')).action(async (name: string, o: StoreOpts) => {
  const { deleteAdvice } = await import('../service/tag-history.js');
  const advice = await withService(o, async (s) => {
    const info = await s.getTag(name);
    await s.deleteTag(name);
    // Read after the delete: a range a server took in between is in the ledger by then.
    // Servers may still hold ranges up to max_id, and earlier creations of the name may have gone higher.
    return deleteAdvice(await s.tagHistory(name, info.maxId), info.maxId);
  });
  console.log(advice);
});

storeOption(
  program
    .command('fence <tag>')
    .description('after a restore: raise the stored max_id to --to and accept the store again')
    .requiredOption('--to <n>', 'a bound above every ID that may have been handed out'),
).action(async (name: string, o: StoreOpts & { to: string }) => {
  const info = await withService(o, (s) => s.fence(name, o.to), { stateDir: true });
  console.log(`fenced ${info.tag}: next ID ${info.maxId} (fence epoch ${info.fenceEpoch})`);
});

registerGenAndExplain(program);
const bench = program
  .command('bench')
  .description('measure the in-process generators on this machine (`npm run bench` in a checkout runs the full suite)')
  .action(async () => {
    const { printBench } = await import('./bench-command.js');
    await printBench();
  });
registerBenchPk(bench);
registerPlan(program);
registerAudit(program);
registerMigrate(program);

await runProgram(program);
