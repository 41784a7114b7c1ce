/**
 * The multi-process contract test runs children on the built code (dist/).
 * Builds it once when dist/ lacks the store code or is older than src/. A lock
 * directory keeps parallel test files from running tsc at the same time.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dist = join(root, 'dist');
const NEEDED = [
  'adapters/create-store',
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
  const src = newestSrc(join(root, 'src/adapters'));
  return NEEDED.every((n) => mtime(join(dist, `${n}.js`)) >= mtime(join(root, 'src', `${n}.ts`)) && mtime(join(dist, `${n}.js`)) > 0) &&
    mtime(join(dist, 'adapters/create-store.js')) >= src;
}

/** Returns the dist directory, building it first when needed. */
export async function ensureDist(): Promise<string> {
  if (fresh()) return dist;
  const lock = join(root, 'test-artifacts', 'dist-build.lock');
  mkdirSync(join(root, 'test-artifacts'), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (mtime(lock) > 0 && Date.now() - mtime(lock) > 170_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error('timed out waiting for another test to build dist/');
      await new Promise((r) => setTimeout(r, 500));
      if (fresh()) return dist;
    }
  }
  try {
    if (!fresh()) {
      // tsc emits even when unrelated files being edited elsewhere fail to type-check.
      await promisify(execFile)(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
        cwd: root,
      }).catch(() => undefined);
      if (!NEEDED.every((n) => mtime(join(dist, `${n}.js`)) > 0)) throw new Error('building dist/ did not produce the store code');
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  return dist;
}
