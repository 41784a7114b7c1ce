/**
 * Start-up cost: `import('sequoia')` against `node -e 0`, and `sequoia gen
 * uuid` against a bare node one-liner printing crypto.randomUUID(). Each
 * pair runs interleaved (a, b, a, b …) so both see the same machine load;
 * figures are medians of wall time and of peak RSS.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './util.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface StartupRow {
  readonly name: string;
  readonly ms: number;
  readonly baseline: string;
  readonly baselineMs: number;
  readonly ratio: number;
  readonly target: number;
}

function timeOnce(args: readonly string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr.toString()}`);
  return ms;
}

function pair(runs: number, a: readonly string[], b: readonly string[]): [number, number] {
  const ta: number[] = [];
  const tb: number[] = [];
  timeOnce(a); // warm the file cache for both
  timeOnce(b);
  for (let i = 0; i < runs; i++) {
    ta.push(timeOnce(a));
    tb.push(timeOnce(b));
  }
  return [median(ta), median(tb)];
}

export function benchStartup(runs = 21): StartupRow[] {
  const nodeZero = ['-e', '0'];
  // Resolved through the package's own "exports", as a user's `import 'sequoia'` is.
  const importLib = ['--input-type=module', '-e', "await import('sequoia')"];
  const [lib, zero] = pair(runs, importLib, nodeZero);
  const cli = [join(ROOT, 'dist', 'cli', 'main.js'), 'gen', 'uuid'];
  const bare = ['-e', "console.log(require('node:crypto').randomUUID())"];
  const [gen, oneLiner] = pair(runs, cli, bare);
  return [
    { name: "`import('sequoia')`", ms: lib, baseline: '`node -e 0`', baselineMs: zero, ratio: lib / zero, target: 1.3 },
    { name: '`sequoia gen uuid`', ms: gen, baseline: 'node one-liner printing `crypto.randomUUID()`', baselineMs: oneLiner, ratio: gen / oneLiner, target: 1.5 },
  ];
}
