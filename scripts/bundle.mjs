// `npm run bundle`: the published entries (dist/pkg/) from tsc's output (dist/), in three esbuild runs, for start-up time.
// 1. The library entries and the worker entries, with shared chunks: `sequoia-id`, `/server` and `/client` share one copy
//    of each class (a SequoiaError from one is `instanceof` in another), and the fewer entries share a build, the fewer
//    chunks each loads (`import('sequoia-id')` loads 8 files, not 22).
// 2. The command table (commands.js, loaded by cli.js for every command but the quick `gen uuid`), with its lazy chunks.
// 3. The bin (cli.js) as one file: `sequoia gen uuid` loads it alone; './commands.js' stays an import of the file beside it.
// Workers are started by path beside the chunk that starts them (off-loop.ts, cluster-primary.ts): the ones of run 1.
import { chmodSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const outdir = 'dist/pkg';
const common = { bundle: true, format: 'esm', platform: 'node', packages: 'external', outdir, logLevel: 'warning' };
rmSync(outdir, { recursive: true, force: true });
await build({
  ...common,
  splitting: true,
  entryPoints: {
    index: 'dist/index.js',
    server: 'dist/app/index.js',
    client: 'dist/client/index.js',
    'cluster-worker': 'dist/app/cluster-worker.js',
    'off-loop-worker': 'dist/app/off-loop-worker.js',
  },
});
await build({ ...common, splitting: true, entryPoints: { commands: 'dist/cli/commands.js' } });
await build({ ...common, entryPoints: { cli: 'dist/cli/main.js' }, external: ['./commands.js'] });
chmodSync(`${outdir}/cli.js`, 0o755);
