/**
 * The floor under `sequoia serve`'s start: the parts it cannot do without,
 * and nothing of Sequoia's. fastify listening with the same schema-less
 * compilers, a pino logger, prom-client's default metrics (bundled in one
 * file by esbuild, as scripts/bundle.mjs bundles them, minified alike), and two worker
 * threads started first, each loading better-sqlite3 and opening a database
 * in WAL mode, as the state dir's and the store's threads do. `/readyz`
 * answers 200 once both threads have answered a query. Built into
 * dist-bench/floor/ so the threads resolve better-sqlite3 from the project.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const THREAD = `const Database = require('better-sqlite3');
const { parentPort, workerData } = require('node:worker_threads');
const db = new Database(workerData);
db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER)');
parentPort.on('message', () => parentPort.postMessage(db.prepare('SELECT count(*) AS n FROM t').get().n));
`;

const SERVER = `import { Worker } from 'node:worker_threads';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const dir = mkdtempSync(join(tmpdir(), 'sequoia-floor-'));
const thread = (name) => {
  const w = new Worker(new URL('./thread.cjs', import.meta.url), { workerData: join(dir, name) });
  w.unref();
  return w;
};
const threads = [thread('state.db'), thread('ids.db')];
const ask = (w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); w.postMessage(0); });
const [{ default: Fastify, LogController }, { default: pino }, prom] = await Promise.all([import('fastify'), import('pino'), import('prom-client')]);
const registry = new prom.Registry();
prom.collectDefaultMetrics({ register: registry });
const refuse = () => { throw new Error('no schemas'); };
const app = Fastify({
  loggerInstance: pino({ level: 'info' }),
  logController: new LogController({ disableRequestLogging: true }),
  schemaController: { compilersFactory: { buildValidator: refuse, buildSerializer: refuse } },
});
app.get('/readyz', async () => { await Promise.all(threads.map(ask)); return { ready: true }; });
await app.listen({ host: '127.0.0.1', port: Number(process.argv[2]) });
`;

/** Builds the floor server; returns the path of its one-file entry. */
export async function buildFloor(root: string): Promise<string> {
  const dir = join(root, 'dist-bench', 'floor');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'thread.cjs'), THREAD);
  writeFileSync(join(dir, 'src.mjs'), SERVER);
  const outfile = join(dir, 'floor.js');
  const { serveMinify } = (await import(pathToFileURL(join(root, 'scripts', 'bundle-options.mjs')).href)) as { serveMinify: object };
  await build({
    ...serveMinify,
    entryPoints: [join(dir, 'src.mjs')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    external: ['better-sqlite3', 'ajv', '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'fast-json-stringify'],
    banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" },
    logLevel: 'warning',
  });
  return outfile;
}
