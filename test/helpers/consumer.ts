/**
 * The package as a consumer has it: `npm pack` of this checkout, the tarball
 * installed by real npm into a fresh project (as .ci/consumer.sh does, there on
 * Node 20 and 24 and with better-sqlite3's own install script).
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, cleanEnv } from './cli.js';

export interface ConsumerProject {
  /** The project's directory: package.json, node_modules/sequoia-id. */
  readonly dir: string;
  /** What `npm install` printed (stdout and stderr). */
  readonly installLog: string;
  /** The installed package's bin (what `npx --no-install sequoia` runs there). */
  readonly bin: string;
}

export interface Ran {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A command run to its end without blocking the event loop (spawnSync for minutes would starve the
 * test worker's own messages); killed at `timeoutMs`.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  o: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly timeoutMs: number },
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'], timeout: o.timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

const version = (dir: string, name: string): string =>
  (JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

/** Packs the checkout (dist/ must be built) into `work` and installs the tarball into `work/app`. */
export async function installPackedConsumer(work: string): Promise<ConsumerProject> {
  // --ignore-scripts: dist/ is built; prepack would build it again.
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' }),
  ) as { filename: string }[];
  const dir = join(work, 'app');
  mkdirSync(dir);
  // README.md tells consumers to allow better-sqlite3's install script (it fetches or compiles the SQLite
  // binding: minutes on a machine that cannot reach GitHub). Declining it keeps what npm lists as not
  // covered the same (nothing else may be listed) and the run short; the checkout's binding of the same
  // pinned version, built for this Node, is copied in instead.
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, allowScripts: { 'better-sqlite3': false } }, null, 2),
  );
  const r = await runCommand('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, packed[0]!.filename)], {
    cwd: dir,
    env: cleanEnv(),
    timeoutMs: 300_000,
  });
  const installLog = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) throw new Error(`npm install of the packed tarball failed (${r.status ?? r.signal}):\n${installLog}`);
  const sqlite = version(dir, 'better-sqlite3');
  if (sqlite !== version(ROOT, 'better-sqlite3')) throw new Error(`better-sqlite3 ${sqlite} in the consumer, not the checkout's`);
  const release = join(dir, 'node_modules', 'better-sqlite3', 'build', 'Release');
  mkdirSync(release, { recursive: true });
  copyFileSync(
    join(ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'),
    join(release, 'better_sqlite3.node'),
  );
  const { bin } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: { sequoia: string } };
  return { dir, installLog, bin: join(dir, 'node_modules', 'sequoia-id', bin.sequoia) };
}
