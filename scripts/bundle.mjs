// `npm run bundle`: the published entries (dist/pkg/) from tsc's output (dist/), in five esbuild runs, for start-up time.
// 1. The library entries, with shared chunks: `sequoia-id`, `/server` and `/client` share one copy of each class (a
//    SequoiaError from one is `instanceof` in another), and the fewer entries share a build, the fewer chunks each
//    loads (`import('sequoia-id')` loads 3 files, not 22: the modules every entry loads are one chunk, sharedCore).
// 2. The command table (commands.js, loaded by cli.js for every command but the quick `gen uuid`), with its lazy chunks.
// 3. The worker entries, one file each: a worker thread or a cluster worker has module instances of its own (nothing
//    to share with the library's classes), and a thread that loads one file boots sooner (serve: about 8% less CPU).
//    They are started by path beside the chunk that starts them (off-loop.ts, cluster-primary.ts, copy-receiver.ts).
// 4. `serve`'s entry (serve-main.js) as one file, loaded by cli.js for `serve` instead of the command table, minified
//    (bundle-options.mjs).
// 5. The bin (cli.js) as one file: `sequoia gen uuid` loads it alone; './commands.js' and './serve-main.js' stay
//    imports of the files beside it.
//
// The pure-JavaScript dependencies (fastify, pino, prom-client, zod, commander, node-zookeeper-client …) are bundled
// in: loaded from node_modules, most of their start-up cost is the loader's (a resolution, package.json reads and a
// compile per file: fastify alone is about 90 files), not their code; bundled, `sequoia serve` spends about a fifth
// less CPU before /readyz (BENCHMARKS.md, "Start-up"). Their licence texts go to dist/pkg/THIRD-PARTY-LICENSES.txt.
// Left outside: the native driver (better-sqlite3), the drivers and the optional peer loaded only for the store or
// provider a user names, and fastify's JSON-schema compilers (never loaded by the server: its routes take no schema;
// outside, test/architecture/library-entry.test.ts can see that they are not loaded).
import { chmodSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { serveMinify } from './bundle-options.mjs';

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
// Only the files that name `require` get it (after the build): on the others it cost `import('sequoia-id')`, whose
// seven files never call require, about 1.7 ms (a node:module load and a createRequire per file).
const banner = "import { createRequire as __sequoiaRequire } from 'node:module'; const require = __sequoiaRequire(import.meta.url);";
const common = { bundle: true, format: 'esm', platform: 'node', external, outdir, logLevel: 'warning', metafile: true };
rmSync(outdir, { recursive: true, force: true });
const library = {
  ...common,
  splitting: true,
  entryPoints: { index: 'dist/index.js', server: 'dist/app/index.js', client: 'dist/client/index.js' },
};
const runs = [
  await build({ ...library, plugins: [sharedCore(await loadedByEveryEntry(library))] }),
  await build({ ...common, splitting: true, entryPoints: { commands: 'dist/cli/commands.js' } }),
  await build({
    ...common,
    entryPoints: {
      'cluster-worker': 'dist/app/cluster-worker.js',
      'off-loop-worker': 'dist/app/off-loop-worker.js',
      'copy-receiver-worker': 'dist/adapters/postgres/copy-receiver-worker.js',
    },
  }),
  // serve's own entry as one file: its lazy imports inline, so a start links a handful of modules instead of the
  // command table's ~60 chunks (each a resolution, a read and a link). The ZooKeeper client stays outside: only a
  // zookeeper provider loads it (from node_modules), and every other start would compile it for nothing.
  await build({ ...common, ...serveMinify, splitting: true, entryPoints: { 'serve-main': 'dist/cli/serve-main.js' } }),
  await build({ ...common, entryPoints: { cli: 'dist/cli/main.js' }, external: [...external, './commands.js', './serve-main.js'] }),
];
// A Set: two runs may write the same chunk (esbuild's runtime helpers, by content hash).
const outputs = new Set(runs.flatMap((r) => Object.keys(r.metafile.outputs)).filter((f) => f.endsWith('.js')));
for (const r of runs) dropBareRuntimeImports(r.metafile);
for (const file of outputs) addRequire(file);
chmodSync(`${outdir}/cli.js`, 0o755);
writeFileSync(`${outdir}/THIRD-PARTY-LICENSES.txt`, licences(runs.map((r) => r.metafile)));

/**
 * The modules that every entry of a split build loads at import. esbuild cuts them into chunks by which entries and
 * lazy chunks reach each (the library: errors, clock, id, and random with the request rules, in four files), though
 * every entry loads all of them; `sharedCore` makes them one.
 */
async function loadedByEveryEntry(options) {
  const { metafile } = await build({ ...options, write: false, logLevel: 'silent' });
  const closure = (file, seen = new Set()) => {
    if (seen.has(file)) return seen;
    seen.add(file);
    for (const i of metafile.outputs[file].imports) if (i.kind === 'import-statement' && metafile.outputs[i.path]) closure(i.path, seen);
    return seen;
  };
  const entries = Object.keys(options.entryPoints).map((name) => `${options.outdir}/${name}.js`);
  const [first, ...rest] = entries.map((f) => closure(f));
  const everywhere = [...first].filter((f) => !entries.includes(f) && rest.every((c) => c.has(f)));
  return everywhere.flatMap((f) => Object.keys(metafile.outputs[f].inputs)).map((p) => resolve(p));
}

/**
 * One module in place of `members` for every importer outside them: each member is then reached by the same entries
 * and lazy chunks, so esbuild puts them in one chunk (`import('sequoia-id')`: 3 files, not 6; about 2 ms). Imports
 * among the members stay as they are (no cycle is added), and the one module re-exports them all.
 */
function sharedCore(members) {
  const set = new Set(members);
  return {
    name: 'shared-core',
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, async (args) => {
        if (args.namespace !== 'file' || args.pluginData === 'inner' || set.has(args.importer)) return undefined;
        const r = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: 'inner',
        });
        return set.has(r.path) ? { path: 'shared-core', namespace: 'shared-core' } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: 'shared-core' }, () => ({
        contents: members.map((m) => `export * from ${JSON.stringify(m)};`).join('\n'),
        resolveDir: process.cwd(),
      }));
    },
  };
}

/**
 * esbuild puts its runtime helpers (`__require`, `__commonJS` …) in a chunk that every entry of a split build imports,
 * bare (`import "./chunk-….js";`), even when nothing it loads calls a helper; a file that does call one imports it by
 * name. The chunk has no effect of its own, so the bare imports go: `import('sequoia-id')` loads one file fewer, and
 * no node:module (the chunk names `require`, so it gets the banner).
 */
function dropBareRuntimeImports(metafile) {
  const runtime = Object.entries(metafile.outputs)
    .filter(([, o]) => Object.keys(o.inputs).length === 0 && o.exports.includes('__require'))
    .map(([f]) => f.slice(f.lastIndexOf('/') + 1));
  for (const file of Object.keys(metafile.outputs).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(file, 'utf8');
    // `import "./chunk.js";` on a line of its own, or `import"./chunk.js";` inside a minified line.
    const bare = (chunk) => new RegExp(`(^import "\\./${chunk.replaceAll('.', '\\.')}";\n)|(?<=^|;)import"\\./${chunk.replaceAll('.', '\\.')}";`, 'm');
    const kept = runtime.reduce((t, chunk) => t.replace(bare(chunk), ''), text);
    if (kept !== text) writeFileSync(file, kept);
  }
}

/**
 * The banner, on a file whose code names `require` (esbuild's `__require` helper, a bundled CommonJS module's
 * require of a built-in or an external package); after a `#!` line, which must stay first.
 */
function addRequire(file) {
  const text = readFileSync(file, 'utf8');
  if (!/\brequire\b/.test(text)) return;
  const shebang = /^#!.*\n/.exec(text)?.[0] ?? '';
  writeFileSync(file, `${shebang}${banner}\n${text.slice(shebang.length)}`);
}

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
