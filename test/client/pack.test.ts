/**
 * The published package as users get it: `npm pack`, install the tarball into
 * a fresh project, `import { createClient } from 'sequoia-id/client'` from a
 * plain ESM script, against a real running server. Also: the client's built
 * files import nothing from the server side.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, type ServerProcess, assertBuilt, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

describe('sequoia-id/client from the packed package', () => {
  it('dist/client imports nothing outside itself but pure core modules (no node: module, no driver)', () => {
    assertBuilt();
    const dir = join(ROOT, 'dist', 'client');
    let seen = 0;
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.js'))) {
      const src = readFileSync(join(dir, f), 'utf8');
      for (const m of src.matchAll(/^(?:import|export)\b[^;]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]/gm)) {
        seen++;
        expect([`${f}: ${m[1] ?? m[2]}`]).toEqual([
          expect.stringMatching(
            /: (\.\/[a-z-]+\.js|\.\.\/core\/(errors|id|tag|request-rules|segment\/prefetch|fallback\/fallback-space|clock|random|timers)\.js)$/,
          ),
        ]);
      }
    }
    expect(seen).toBeGreaterThan(3);
  });

  it('the core modules the client reaches import no node: module and nothing outside core, all the way down', () => {
    assertBuilt();
    const IMPORT = /^(?:import|export)\b[^;]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]|\brequire\(\s*['"]([^'"]+)['"]/gm;
    const queue = readdirSync(join(ROOT, 'dist', 'client'))
      .filter((n) => n.endsWith('.js'))
      .map((n) => join(ROOT, 'dist', 'client', n));
    const seen = new Set<string>();
    const outside: string[] = [];
    while (queue.length > 0) {
      const file = queue.pop() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const spec = (m[1] ?? m[2] ?? m[3]) as string;
        const target = spec.startsWith('.') ? join(dirname(file), spec) : spec;
        if (!target.startsWith(join(ROOT, 'dist', 'client')) && !target.startsWith(join(ROOT, 'dist', 'core'))) {
          outside.push(`${file.replace(ROOT, '')}: ${spec}`);
        } else queue.push(target);
      }
    }
    expect(seen.size).toBeGreaterThan(8);
    expect(outside).toEqual([]);
  });

  it('installs from the tarball and gets IDs from a running server', async () => {
    assertBuilt();
    const work = mkdtempSync(join(tmpdir(), 'sequoia-pack-'));
    // --ignore-scripts: dist/ is already built (npm test builds first); prepare would rebuild it.
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' }),
    ) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toContain('dist/client/index.js');
    expect(files).toContain('dist/client/index.d.ts');
    expect(files).toContain('dist/pkg/client.js');
    expect(files).toContain('dist/pkg/cli.js');
    expect(files.some((f) => f.includes('.test.'))).toBe(false);

    const app = join(work, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
    execFileSync('npm', ['install', join(work, packed[0]!.filename), '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: app,
      encoding: 'utf8',
      timeout: 180_000,
    });

    const db = `sqlite:${join(work, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--store', db], { SEQUOIA_STATE_DIR: join(work, 'cli') }).status).toBe(0);
    const s = await startServe(['--store', db, '--state-dir', join(work, 'state'), '--workers', '1', '--log-level', 'info']);
    running.push(s);
    writeFileSync(
      join(app, 'main.mjs'),
      `import { createClient, SequoiaError } from 'sequoia-id/client';
const c = createClient({ url: process.argv[2] });
const a = await c.next('order');
const b = await c.nextBatch('order', 3);
let code = '';
try { await c.next('missing'); } catch (e) { code = e instanceof SequoiaError ? e.code : 'other'; }
await c.close();
console.log(JSON.stringify({ a: String(a), type: typeof a, b: b.map(String), code }));
`,
    );
    const out = JSON.parse(execFileSync(process.execPath, ['main.mjs', s.url], { cwd: app, encoding: 'utf8', timeout: 30_000 })) as {
      a: string;
      type: string;
      b: string[];
      code: string;
    };
    expect(out).toEqual({ a: '1', type: 'bigint', b: ['2', '3', '4'], code: 'TAG_NOT_FOUND' });
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }, 300_000); // npm install from the tarball: minutes on a loaded 2-core machine
});
