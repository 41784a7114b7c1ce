/**
 * Start-up cost, each subject against its baseline in the same run:
 * - `sequoia serve` (defaults: a SQLite store and the state dir under ./data
 *   of a fresh directory) from exec to the first `/readyz` 200, against a
 *   bare `node:http` server from exec to its first 200;
 * - `import('sequoia-id')` against `node -e 0`;
 * - `sequoia gen uuid` against a bare node one-liner printing crypto.randomUUID().
 * Each pair runs interleaved (a, b, a, b …) so both see the same machine
 * load. Figures are medians of wall time and of CPU time (user + system of
 * the whole process, every thread: for the one-shot commands read by a tiny
 * CommonJS preload at exit, the same on both sides; for the servers read
 * from /proc/PID/stat at the moment /readyz answers, at 10 ms resolution):
 * on a shared machine the CPU time is the steadier of the two.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './util.js';
import { buildFloor } from './startup-floor.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'dist', 'pkg', 'cli.js');

export interface StartupRow {
  readonly name: string;
  readonly baseline: string;
  readonly ms: number;
  readonly baselineMs: number;
  readonly cpuMs: number;
  readonly baselineCpuMs: number;
  /** Undefined: a bound measured beside the targets, with none of its own. */
  readonly target: number | undefined;
  readonly runs: number;
}

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

let preload: string | undefined;

function runOnce(args: readonly string[], cwd = ROOT): Sample {
  preload ??= (() => {
    const f = join(mkdtempSync(join(tmpdir(), 'sequoia-startup-')), 'cpu-at-exit.cjs');
    writeFileSync(
      f,
      "process.on('exit', () => { const u = process.cpuUsage(); process.stderr.write('\\nCPU_US ' + (u.user + u.system) + '\\n'); });\n",
    );
    return f;
  })();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['-r', preload, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const wallMs = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr.toString()}`);
  const cpu = /CPU_US (\d+)/.exec(r.stderr.toString())?.[1];
  return { wallMs, cpuMs: Number(cpu) / 1000 };
}

/** Runs each subject `runs` times, interleaved (a, b, c, a, b, c …), after one warm-up each; the medians, in order. */
async function interleave<T extends Array<() => Sample | Promise<Sample>>>(
  runs: number,
  ...subjects: T
): Promise<{ [K in keyof T]: Sample }> {
  const samples: Sample[][] = subjects.map(() => []);
  for (const s of subjects) await s(); // warm the file cache for each
  for (let i = 0; i < runs; i++) for (const [j, s] of subjects.entries()) samples[j]?.push(await s());
  return samples.map((xs) => ({ wallMs: median(xs.map((x) => x.wallMs)), cpuMs: median(xs.map((x) => x.cpuMs)) })) as {
    [K in keyof T]: Sample;
  };
}

/** A port free now (the OS's choice), for a server about to be started. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function status(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** CPU time (user + system, every thread) of a running process so far; NaN where there is no /proc. */
function cpuOf(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(f[11]) + Number(f[12])) * 10; // clock ticks of 10 ms
  } catch {
    return Number.NaN;
  }
}

/** Spawns `args` with `--port` at a free port, polls GET /readyz until 200; the time from spawn, then stops the process. */
async function readyOnce(args: (port: number) => string[], cwd: string): Promise<Sample> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, args(port), { cwd, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  for (;;) {
    if (gone) throw new Error(`node ${args(port).join(' ')} exited before answering /readyz`);
    if ((await status(port)) === 200) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  const wallMs = performance.now() - t0;
  const cpuMs = cpuOf(child.pid as number);
  child.kill('SIGTERM');
  await exited;
  return { wallMs, cpuMs };
}

export async function benchStartup(runs = 21, serveRuns = 11): Promise<StartupRow[]> {
  // `sequoia serve` with its defaults (sqlite:./data/sequoia.db, state dir ./data), each run in a fresh directory.
  const serve = () => readyOnce((port) => [BIN, 'serve', '--port', String(port)], mkdtempSync(join(tmpdir(), 'sequoia-startup-serve-')));
  const bareHttp = () =>
    readyOnce((port) => ['-e', `require('node:http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`], tmpdir());
  // The parts serve cannot do without, alone (startup-floor.ts): what a start costs before any of Sequoia's own work.
  const floorJs = await buildFloor(ROOT);
  const floor = () => readyOnce((port) => [floorJs, String(port)], tmpdir());
  const [srv, bare, parts] = await interleave(serveRuns, serve, bareHttp, floor);
  const nodeZero = ['-e', '0'];
  // Resolved through the package's own "exports", as a user's `import 'sequoia-id'` is.
  const importLib = ['--input-type=module', '-e', "await import('sequoia-id')"];
  // The floor under it: an empty ES module imported the same way, by its package's name through "exports".
  const emptyPkg = mkdtempSync(join(tmpdir(), 'sequoia-startup-empty-'));
  writeFileSync(join(emptyPkg, 'package.json'), JSON.stringify({ name: 'empty-pkg', type: 'module', exports: './index.js' }));
  writeFileSync(join(emptyPkg, 'index.js'), 'export {};\n');
  const importEmpty = ['--input-type=module', '-e', "await import('empty-pkg')"];
  const [lib, zero, empty] = await interleave(
    runs,
    () => runOnce(importLib),
    () => runOnce(nodeZero),
    () => runOnce(importEmpty, emptyPkg),
  );
  // The command the package installs (package.json "bin").
  const cli = [BIN, 'gen', 'uuid'];
  const oneLiner = ['-e', "console.log(require('node:crypto').randomUUID())"];
  const [gen, bareGen] = await interleave(
    runs,
    () => runOnce(cli),
    () => runOnce(oneLiner),
  );
  const row = (name: string, baseline: string, x: Sample, base: Sample, target: number | undefined, n: number): StartupRow => ({
    name,
    baseline,
    ms: x.wallMs,
    baselineMs: base.wallMs,
    cpuMs: x.cpuMs,
    baselineCpuMs: base.cpuMs,
    target,
    runs: n,
  });
  return [
    row(
      '`sequoia serve` (SQLite store, defaults), exec to `/readyz` 200',
      'bare `node:http` server, exec to its first 200',
      srv,
      bare,
      2.5,
      serveRuns,
    ),
    row(
      'the parts `serve` needs, alone: fastify, pino, prom-client (bundled), two threads opening SQLite (`bench/startup-floor.ts`)',
      'bare `node:http` server, exec to its first 200',
      parts,
      bare,
      undefined,
      serveRuns,
    ),
    row("`import('sequoia-id')`", '`node -e 0`', lib, zero, 1.15, runs),
    row('an empty ES module imported by its package name, as `sequoia-id` is', '`node -e 0`', empty, zero, undefined, runs),
    row('`sequoia gen uuid`', 'node one-liner printing `crypto.randomUUID()`', gen, bareGen, 1.2, runs),
  ];
}
