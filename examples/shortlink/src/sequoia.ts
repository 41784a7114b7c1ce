/** The Sequoia side: making sure the tag exists, and a local `sequoia serve` for the one-command start. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

/**
 * Creates the segment tag if it does not exist yet (`POST /v1/tags`; 409
 * TAG_EXISTS is fine). The tag's IDs start at `start` the first time only.
 */
export async function ensureTag(sequoiaUrl: string, tag: string, opts: { token?: string; step?: number; start?: string } = {}): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let res: Response;
  try {
    res = await fetch(new URL('/v1/tags', sequoiaUrl), {
      method: 'POST',
      headers,
      body: JSON.stringify({ tag, step: opts.step ?? 1000, start: opts.start ?? '1', description: 'short links' }),
      signal: AbortSignal.timeout(5000),
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`cannot reach Sequoia at ${sequoiaUrl}: ${cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e))}`, { cause: e });
  }
  if (res.status === 201) return;
  const text = await res.text();
  if (res.status === 409 && text.includes('TAG_EXISTS')) return;
  throw new Error(`cannot create the Sequoia tag ${tag} at ${sequoiaUrl}: HTTP ${res.status} ${text.slice(0, 200)}`);
}

export interface LocalSequoia {
  readonly url: string;
  stop(): Promise<void>;
}

/** The `sequoia` command of the installed package. */
export function sequoiaBin(): string {
  return join(dirname(createRequire(import.meta.url).resolve('sequoia-id/package.json')), 'dist', 'cli', 'main.js');
}

/**
 * Starts `sequoia serve` on a free loopback port with its SQLite store and
 * state under `dataDir`, and resolves with its URL once it listens. The
 * state dir matters: it holds the rollback guard, so keep it with the store.
 */
export async function startLocalSequoia(dataDir: string, bin: string = sequoiaBin()): Promise<LocalSequoia> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SEQUOIA_')) env[k] = v;
  const child: ChildProcess = spawn(
    process.execPath,
    [bin, 'serve', '--host', '127.0.0.1', '--port', '0', '--store', `sqlite:${join(dir, 'sequoia.db')}`, '--state-dir', join(dir, 'state')],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`sequoia serve did not start within 20 s:\n${out}`)), 20_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        ok(m[1]!);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      fail(new Error(`sequoia serve exited before listening:\n${out}`));
    });
  });
  // Keep draining its log (unread) so a full pipe never blocks it.
  child.stdout?.resume();
  child.stderr?.resume();
  return {
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
