/** `sequoia serve`: its options (the config field table) and its action. */
import type { Command } from 'commander';
import type { FieldName } from '../app/config.js';

export async function registerServe(program: Command): Promise<void> {
  const serve = program.command('serve').description('run the HTTP ID server');
  if (process.argv.slice(2).includes('serve')) {
    // The field table (and its schema library) loads only for serve: every other command starts without it.
    const { FIELDS } = await import('../app/config.js');
    for (const f of Object.values(FIELDS)) {
      // commander names the option's attribute after the flag: --state-dir → stateDir, matching FIELDS.
      // A field whose doc names its own default (derived from another field) shows no "default none".
      const dflt = f.default !== undefined ? `; default ${String(f.default)}` : /\(default /.test(f.doc) ? '' : '; default none';
      // An on/off field (a boolean default) is a bare switch: `--allow-open-admin`, or `--allow-open-admin false`.
      const arg = typeof f.default === 'boolean' ? '[true|false]' : '<value>';
      serve.option(`${f.flag} ${arg}`, `${f.doc} (env ${f.env}${dflt})`);
    }
    serve.option('--config <file>', 'JSON config file (env SEQUOIA_CONFIG)');
  }
  serve.action(async (opts: Record<string, unknown>) => {
    const { config: file, ...flags } = opts;
    const { resolveConfig } = await import('../app/config.js');
    const config = resolveConfig(flags as Partial<Record<FieldName, unknown>>, process.env, file as string | undefined);
    // Loaded only here: the admin commands stay quick without fastify and pino.
    // --workers 1 runs in this process; more fork a node:cluster primary (src/app/cluster.ts).
    const { serve: runServe } = await import('../app/cluster.js');
    await runServe(config);
  });
}
