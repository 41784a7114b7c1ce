/**
 * Start-up cost: `import('sequoia-id')` against `node -e 0`, and `sequoia gen
 * uuid` against a bare node one-liner printing crypto.randomUUID(). Each
 * pair runs interleaved (a, b, a, b …) so both see the same machine load;
 * figures are medians of wall time and of CPU time (user + system, read by a
 * tiny CommonJS preload at exit, the same on both sides): on a shared
 * machine the CPU time is the steadier of the two.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './util.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface StartupRow {
  readonly name: string;
  readonly baseline: string;
  readonly ms: number;
  readonly baselineMs: number;
  readonly cpuMs: number;
  readonly baselineCpuMs: number;
  readonly target: number;
}

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

let preload: string | undefined;

function runOnce(args: readonly string[]): Sample {
  preload ??= (() => {
    const f = join(mkdtempSync(join(tmpdir(), 'sequoia-startup-')), 'cpu-at-exit.cjs');
    writeFileSync(
      f,
      "process.on('exit', () => { const u = process.cpuUsage(); process.stderr.write('\\nCPU_US ' + (u.user + u.system) + '\\n'); });\n",
    );
    return f;
  })();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['-r', preload, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const wallMs = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr.toString()}`);
  const cpu = /CPU_US (\d+)/.exec(r.stderr.toString())?.[1];
  return { wallMs, cpuMs: Number(cpu) / 1000 };
}

function pair(runs: number, a: readonly string[], b: readonly string[]): [Sample, Sample] {
  const sa: Sample[] = [];
  const sb: Sample[] = [];
  runOnce(a); // warm the file cache for both
  runOnce(b);
  for (let i = 0; i < runs; i++) {
    sa.push(runOnce(a));
    sb.push(runOnce(b));
  }
  const med = (xs: Sample[]): Sample => ({ wallMs: median(xs.map((x) => x.wallMs)), cpuMs: median(xs.map((x) => x.cpuMs)) });
  return [med(sa), med(sb)];
}

export function benchStartup(runs = 21): StartupRow[] {
  const nodeZero = ['-e', '0'];
  // Resolved through the package's own "exports", as a user's `import 'sequoia-id'` is.
  const importLib = ['--input-type=module', '-e', "await import('sequoia-id')"];
  const [lib, zero] = pair(runs, importLib, nodeZero);
  // The command the package installs (package.json "bin").
  const cli = [join(ROOT, 'dist', 'pkg', 'cli.js'), 'gen', 'uuid'];
  const bare = ['-e', "console.log(require('node:crypto').randomUUID())"];
  const [gen, oneLiner] = pair(runs, cli, bare);
  const row = (name: string, baseline: string, x: Sample, base: Sample, target: number): StartupRow => ({
    name,
    baseline,
    ms: x.wallMs,
    baselineMs: base.wallMs,
    cpuMs: x.cpuMs,
    baselineCpuMs: base.cpuMs,
    target,
  });
  return [
    row("`import('sequoia-id')`", '`node -e 0`', lib, zero, 1.3),
    row('`sequoia gen uuid`', 'node one-liner printing `crypto.randomUUID()`', gen, oneLiner, 1.5),
  ];
}
