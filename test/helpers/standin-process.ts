/**
 * Runs a stand-in of an old ID server (Leaf, Tinyid: test/helpers/*-standin-main.ts)
 * as a child process that can be killed: the TypeScript entry is bundled once
 * with esbuild (drivers left external, resolved from this repository's
 * node_modules) and started with node. Each stdout line is one range `START END`
 * the stand-in handed out (IDs START <= id < END, stepping as its caller knows).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const built = new Map<string, string>();

function bundle(entry: string): string {
  let out = built.get(entry);
  if (out) return out;
  const dir = join(ROOT, 'node_modules', '.cache', 'sequoia-standins');
  mkdirSync(dir, { recursive: true });
  out = join(dir, `${entry}-${process.pid}.mjs`);
  buildSync({
    entryPoints: [join(ROOT, 'test', 'helpers', `${entry}.ts`)],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outfile: out,
    logLevel: 'warning',
  });
  built.set(entry, out);
  return out;
}

export interface StandIn {
  readonly child: ChildProcess;
  /** Every range line printed so far, parsed. */
  readonly ranges: Array<[bigint, bigint]>;
  readonly exited: Promise<number | string>;
  readonly stderr: () => string;
}

export function startStandIn(entry: 'leaf-standin-main' | 'tinyid-standin-main', args: string[]): StandIn {
  const child = spawn(process.execPath, [bundle(entry), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const ranges: Array<[bigint, bigint]> = [];
  let buf = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) {
      const [a, b] = l.trim().split(' ');
      if (a !== undefined && b !== undefined) ranges.push([BigInt(a), BigInt(b)]);
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  return { child, ranges, exited, stderr: () => err };
}
