/**
 * The multi-process contract test runs children on built code. It is built
 * (tsconfig.build.json) into a private directory, test-artifacts/contract-dist,
 * not dist/: other people's builds rewrite dist/ at any moment, and a child
 * importing a half-written file fails for no fault of the store. It is rebuilt
 * only when the store sources are newer than the build. A lock directory keeps
 * parallel test files from running tsc at the same time.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dist = join(root, 'test-artifacts', 'contract-dist');
const NEEDED = [
  'app/stores',
  'adapters/postgres/postgres-segment-store',
  'adapters/mysql/mysql-segment-store',
  'adapters/redis/redis-segment-store',
  'adapters/multi/multi-segment-store',
  'adapters/sqlite/sqlite-segment-store',
  'adapters/memory/memory-segment-store',
];

function mtime(p: string): number {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return -1;
  }
}

function newestSrc(dir: string): number {
  let m = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) m = Math.max(m, newestSrc(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) m = Math.max(m, mtime(p));
  }
  return m;
}

function fresh(): boolean {
  const src = Math.max(...['adapters', 'app', 'core', 'ports'].map((d) => newestSrc(join(root, 'src', d))));
  return (
    NEEDED.every((n) => mtime(join(dist, `${n}.js`)) >= mtime(join(root, 'src', `${n}.ts`)) && mtime(join(dist, `${n}.js`)) > 0) &&
    mtime(join(dist, 'app/stores.js')) >= src
  );
}

/** Returns the dist directory, building it first when needed. */
export async function ensureDist(): Promise<string> {
  const lock = join(root, 'test-artifacts', 'contract-dist.lock');
  // While another test file builds, its half-written output may look fresh: wait for the lock.
  if (!existsSync(lock) && fresh()) return dist;
  mkdirSync(join(root, 'test-artifacts'), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (mtime(lock) > 0 && Date.now() - mtime(lock) > 170_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error('timed out waiting for another test to build the store code');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (!fresh()) {
      // tsc emits even when unrelated files being edited elsewhere fail to type-check.
      await promisify(execFile)(
        process.execPath,
        [
          join(root, 'node_modules/typescript/bin/tsc'),
          '-p',
          'tsconfig.build.json',
          '--outDir',
          dist,
          '--declaration',
          'false',
          '--sourceMap',
          'false',
        ],
        {
          cwd: root,
        },
      ).catch(() => undefined);
      if (!NEEDED.every((n) => mtime(join(dist, `${n}.js`)) > 0)) throw new Error(`building ${dist} did not produce the store code`);
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  return dist;
}
