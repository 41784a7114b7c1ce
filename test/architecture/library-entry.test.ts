/**
 * What the library entry and a light CLI command load: `import 'sequoia-id'`
 * gives the generators and loads no server, store or driver code; `sequoia
 * gen uuid` loads no store, driver, server or config schema; an admin
 * command loads only the driver of the store it names. Traced with module
 * hooks in a child process, on the built package (npm run build).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGED_BIN, ROOT, assertBuilt, cleanEnv, launchServe, startServe } from '../helpers/cli.js';

const REGISTER = join(ROOT, 'test', 'helpers', 'load-trace', 'register.mjs');
const REQUIRES = join(ROOT, 'test', 'helpers', 'load-trace', 'require-trace.mjs');

function loaded(args: readonly string[]): string[] {
  const r = spawnSync(process.execPath, ['--import', REGISTER, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
  return [...r.stderr.matchAll(/^LOADED (\S+)$/gm)].map((m) => (m[1] as string).replace(`file://${join(ROOT, '/')}`, ''));
}

const DRIVERS = /node_modules\/(pg|pg-[a-z-]+|mysql2|ioredis|better-sqlite3|node-zookeeper-client)\//;
const SERVER_SIDE = /node_modules\/(fastify|pino|prom-client|zod)\/|dist\/(app|server|adapters|service|cli)\//;

describe('what gets loaded', () => {
  it("import('sequoia-id') loads no server, store, driver or other package", () => {
    assertBuilt();
    const mods = loaded([
      '--input-type=module',
      '-e',
      "const m = await import('sequoia-id'); if (typeof m.UuidV7Generator !== 'function') process.exit(3);",
    ]);
    expect(mods.some((m) => m.startsWith('dist/pkg/index.js'))).toBe(true);
    expect(mods.filter((m) => m.includes('node_modules/') || SERVER_SIDE.test(m))).toEqual([]);
  });

  // node:module (createRequire) cost `import('sequoia-id')` about 1 ms and its files never call require
  // (BENCHMARKS.md, start-up); the load trace sees no built-ins, so the files it loads are read.
  it("import('sequoia-id') imports no node:module: none of its files calls require", () => {
    assertBuilt();
    const files = [...new Set(loaded(['--input-type=module', '-e', "await import('sequoia-id');"]))];
    expect(files.length).toBeGreaterThan(0);
    const withModule = files.filter((f) => /from ["']node:module["']/.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(withModule).toEqual([]);
  });

  it('sequoia gen uuid loads no store, driver, server or config schema', () => {
    assertBuilt();
    const mods = loaded([join(ROOT, 'dist', 'cli', 'main.js'), 'gen', 'uuid']);
    expect(mods).toContain('dist/cli/main.js');
    const heavy = mods.filter(
      (m) =>
        DRIVERS.test(m) ||
        /node_modules\/(fastify|pino|prom-client|zod)\//.test(m) ||
        /dist\/(adapters|server|service)\//.test(m) ||
        /dist\/app\/(?!defaults\.js)/.test(m),
    );
    expect(heavy).toEqual([]);
  });

  it('an admin command on SQLite loads the SQLite driver and no other', () => {
    assertBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-loads-'));
    const mods = loaded([
      join(ROOT, 'dist', 'cli', 'main.js'),
      'tag',
      'list',
      '--store',
      `sqlite:${join(dir, 'ids.db')}`,
      '--state-dir',
      dir,
    ]);
    expect(mods.some((m) => m.includes('dist/adapters/sqlite/'))).toBe(true);
    expect(
      mods.filter((m) => /node_modules\/(pg|mysql2|ioredis|fastify)\//.test(m) || /dist\/adapters\/(postgres|mysql|redis)\//.test(m)),
    ).toEqual([]);
  });
});

describe('the bundled command (package.json "bin")', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, [PACKAGED_BIN, ...args], { encoding: 'utf8', env: cleanEnv(), timeout: 30_000 });

  it('loads no store, driver or server for gen uuid, and generates', () => {
    assertBuilt();
    const mods = loaded([PACKAGED_BIN, 'gen', 'uuid']);
    expect(mods.filter((m) => DRIVERS.test(m) || /node_modules\/(fastify|pino|prom-client|zod)\//.test(m))).toEqual([]);
    // Answered before the command table: one file, not commander and its chunks.
    expect(loaded(['--import', REQUIRES, PACKAGED_BIN, 'gen', 'uuid']).filter((m) => !m.startsWith('test/'))).toEqual(['dist/pkg/cli.js']);
    // Nor a built-in the quick path does not use (the trace sees files only): no static import at all in the bin's file.
    expect(readFileSync(PACKAGED_BIN, 'utf8').match(/^import .*$/gm) ?? []).toEqual([]);
    const r = run(['gen', 'uuid', '--count', '3']);
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(3);
  });

  it('manages tags on SQLite and serves segment IDs from two cluster workers', async () => {
    assertBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-bundle-'));
    const store = `sqlite:${join(dir, 'ids.db')}`;
    expect(run(['tag', 'create', 'order', '--store', store, '--state-dir', join(dir, 'cli')]).status).toBe(0);
    expect(run(['tag', 'list', '--store', store, '--state-dir', join(dir, 'cli')]).stdout).toMatch(/^order\t/m);
    const s = await startServe(
      ['--store', store, '--state-dir', join(dir, 'state'), '--workers', '2', '--log-level', 'info'],
      {},
      PACKAGED_BIN,
    );
    try {
      const r = await fetch(`${s.url}/v1/segment/order`);
      expect(r.status).toBe(200);
      expect(((await r.json()) as { ids: unknown[] }).ids).toHaveLength(1);
    } finally {
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });
});

/**
 * The modules a `serve` on a fresh SQLite store and state dir loaded by the time `path` answered 200:
 * `node [preloads] bin serve …` with the module-load trace, stopped with SIGTERM (it must drain and exit 0).
 */
async function serveLoads(preloads: readonly string[], bin: string, path: string): Promise<string[]> {
  assertBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-serve-loads-'));
  const store = ['--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', join(dir, 'state')];
  const s = await launchServe(process.execPath, ['--import', REGISTER, ...preloads, bin, 'serve', '--port', '0', ...store]);
  try {
    expect((await fetch(`${s.url}${path}`)).status).toBe(200);
  } finally {
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }
  return [...s.output().matchAll(/^LOADED (\S+)$/gm)].map((m) => m[1] as string);
}

describe('what serve loads before it is ready', () => {
  it('no JSON-schema compiler (its routes take none) and no driver of a store it does not use', async () => {
    const mods = await serveLoads(['--import', REQUIRES], PACKAGED_BIN, '/readyz');
    // The trace sees node_modules (the native SQLite driver stays outside the bundle) ...
    expect(mods.some((m) => m.includes('node_modules/better-sqlite3/'))).toBe(true);
    // ... and no pure-JavaScript dependency comes from there: they are bundled (scripts/bundle.mjs), one compile
    // of a few files instead of a resolution and a compile per file.
    const bundled = /node_modules\/(fastify|pino|prom-client|zod|commander|node-zookeeper-client|@opentelemetry)\//;
    expect(mods.filter((m) => bundled.test(m))).toEqual([]);
    // fastify's error serializer (fast-json-stringify/lib/serializer) is precompiled; the schema compilers are not loaded.
    const compilers = /node_modules\/(ajv|@fastify\/ajv-compiler|@fastify\/fast-json-stringify-compiler)\/|fast-json-stringify\/index\.js/;
    expect(mods.filter((m) => compilers.test(m) || /node_modules\/(pg|mysql2|ioredis|etcd3)\//.test(m))).toEqual([]);
  });

  it('from the compiled tree (dependencies from node_modules): no ZooKeeper client unless the provider is zookeeper', async () => {
    const mods = await serveLoads([], join(ROOT, 'dist', 'cli', 'main.js'), '/v1/snowflake');
    expect(mods.some((m) => m.includes('node_modules/fastify/'))).toBe(true);
    expect(
      mods.filter((m) => /node_modules\/node-zookeeper-client\/|dist\/adapters\/zookeeper\/zookeeper-(session|worker-id|leaf)/.test(m)),
    ).toEqual([]);
  });
});

describe('the type declarations a consumer compiles', () => {
  // A consumer's tsc follows every import of the public .d.ts files (without
  // skipLibCheck); one that reaches a package the consumer need not install
  // (an optional peer, a dev dependency) fails their build.
  it('reach only the packages sequoia-id depends on', () => {
    assertBuilt();
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { types?: string }>;
      dependencies: Record<string, string>;
    };
    const seen = new Set<string>();
    const bare = new Map<string, string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
        const spec = m[1] as string;
        if (spec.startsWith('.')) visit(join(dirname(file), spec.replace(/\.js$/, '.d.ts')));
        else if (!spec.startsWith('node:'))
          bare.set(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string), file);
      }
    };
    for (const entry of Object.values(pkg.exports)) if (entry.types) visit(join(ROOT, entry.types));
    expect(seen.size).toBeGreaterThan(10);
    const outside = [...bare].filter(([name]) => !(name in pkg.dependencies)).map(([name, file]) => `${name} (${file.replace(ROOT, '')})`);
    expect(outside).toEqual([]);
  });
});
