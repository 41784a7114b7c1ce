// `npm run bundle`: the published entries (dist/pkg/) from tsc's output (dist/), in four esbuild runs, for start-up time.
// 1. The library entries, with shared chunks: `sequoia-id`, `/server` and `/client` share one copy of each class (a
//    SequoiaError from one is `instanceof` in another), and the fewer entries share a build, the fewer chunks each
//    loads (`import('sequoia-id')` loads 7 files, not 22).
// 2. The command table (commands.js, loaded by cli.js for every command but the quick `gen uuid`), with its lazy chunks.
// 3. The worker entries, one file each: a worker thread or a cluster worker has module instances of its own (nothing
//    to share with the library's classes), and a thread that loads one file boots sooner (serve: about 8% less CPU).
//    They are started by path beside the chunk that starts them (off-loop.ts, cluster-primary.ts).
// 4. The bin (cli.js) as one file: `sequoia gen uuid` loads it alone; './commands.js' stays an import of the file beside it.
//
// The pure-JavaScript dependencies (fastify, pino, prom-client, zod, commander, node-zookeeper-client …) are bundled
// in: loaded from node_modules, most of their start-up cost is the loader's (a resolution, package.json reads and a
// compile per file: fastify alone is about 90 files), not their code; bundled, `sequoia serve` spends about a fifth
// less CPU before /readyz (BENCHMARKS.md, "Start-up"). Their licence texts go to dist/pkg/THIRD-PARTY-LICENSES.txt.
// Left outside: the native driver (better-sqlite3), the drivers and the optional peer loaded only for the store or
// provider a user names, and fastify's JSON-schema compilers (never loaded by the server: its routes take no schema;
// outside, test/architecture/library-entry.test.ts can see that they are not loaded).
import { chmodSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const outdir = 'dist/pkg';
const external = [
  'better-sqlite3',
  'pg',
  'pg-copy-streams',
  'mysql2',
  'ioredis',
  'etcd3',
  'ajv',
  '@fastify/ajv-compiler',
  '@fastify/fast-json-stringify-compiler',
  'fast-json-stringify',
];
// A bundled CommonJS module's require() of a Node built-in or of an external package needs a require in ESM scope.
const banner = {
  js: "import { createRequire as __sequoiaRequire } from 'node:module'; const require = __sequoiaRequire(import.meta.url);",
};
const common = { bundle: true, format: 'esm', platform: 'node', external, banner, outdir, logLevel: 'warning', metafile: true };
rmSync(outdir, { recursive: true, force: true });
const runs = [
  await build({
    ...common,
    splitting: true,
    entryPoints: {
      index: 'dist/index.js',
      server: 'dist/app/index.js',
      client: 'dist/client/index.js',
    },
  }),
  await build({ ...common, splitting: true, entryPoints: { commands: 'dist/cli/commands.js' } }),
  await build({
    ...common,
    entryPoints: { 'cluster-worker': 'dist/app/cluster-worker.js', 'off-loop-worker': 'dist/app/off-loop-worker.js' },
  }),
  await build({ ...common, entryPoints: { cli: 'dist/cli/main.js' }, external: [...external, './commands.js'] }),
];
chmodSync(`${outdir}/cli.js`, 0o755);
writeFileSync(`${outdir}/THIRD-PARTY-LICENSES.txt`, licences(runs.map((r) => r.metafile)));

/** Each bundled package's name, version, licence and licence (and NOTICE) text, as their licences ask of a copy. */
function licences(metafiles) {
  const dirs = new Set();
  for (const m of metafiles) {
    for (const input of Object.keys(m.inputs)) {
      const x = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
      if (x) dirs.add(x[1]);
    }
  }
  const parts = [...dirs].sort().map((dir) => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const texts = readdirSync(dir)
      .filter((f) => /^(licen[cs]e|copying|notice)/i.test(f))
      .map((f) => readFileSync(join(dir, f), 'utf8').trim());
    if (texts.length === 0) texts.push(`${pkg.license} licence; no licence file in the package.`);
    return `${pkg.name}@${pkg.version} (${pkg.license})\n\n${texts.join('\n\n')}`;
  });
  return `Sequoia's bundles in this folder include the following packages.\n\n${parts.join(`\n\n${'-'.repeat(72)}\n\n`)}\n`;
}
