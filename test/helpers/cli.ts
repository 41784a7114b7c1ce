/** Spawning the built `sequoia` binary, as users run it. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
/** The bundled command the package installs (package.json "bin"). */
export const PACKAGED_BIN = fileURLToPath(new URL('../../dist/pkg/cli.js', import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
}

export function sequoia(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  o: { readonly cwd?: string } = {},
): { status: number | null; stdout: string; stderr: string } {
  assertBuilt();
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...cleanEnv(), ...env },
    timeout: 30_000,
    ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The environment without SEQUOIA_* settings that would leak into a test. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SEQUOIA_') || k === 'SEQUOIA_REQUIRE_SERVICES') env[k] = v;
  return env;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
  /** Resolves with the exit code (or signal name). */
  readonly exited: Promise<number | string>;
}

/** Starts `sequoia serve --port 0 …` with node directly (npx would not pass signals) and waits for its URL. */
export async function startServe(args: string[], env: NodeJS.ProcessEnv = {}, bin = BIN): Promise<ServerProcess> {
  assertBuilt();
  return launchServe(process.execPath, [bin, 'serve', '--port', '0', ...args], { env });
}

/**
 * Starts a server by any command line (e.g. under `faketime`) and waits for
 * its `listening` log line. `detached` puts it in its own process group, for
 * wrappers that fork the server (kill the group, not just the wrapper).
 */
export async function launchServe(
  command: string,
  argv: string[],
  options: { readonly env?: NodeJS.ProcessEnv; readonly detached?: boolean; readonly startTimeoutMs?: number } = {},
): Promise<ServerProcess> {
  const child = spawn(command, argv, {
    env: { ...cleanEnv(), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let out = '';
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // never listening (or never saying so): not left running behind the test
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${out}`));
    }, options.startTimeoutMs ?? 45_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${out}`));
    });
  });
  return { child, url, output: () => out, exited };
}
