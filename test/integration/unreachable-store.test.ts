/**
 * A store that cannot be reached ends `serve` and `tag list` with exit status
 * 1 within the connect timeout, naming host and port: for every networked
 * store kind (nothing listens on 127.0.0.1:1). A client that keeps
 * reconnecting in the background must not keep the process alive.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { probeRedis, REDIS_URL } from '../contract/backends.js';
import { assertBuilt, BIN, cleanEnv } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const STORES = [
  'redis://127.0.0.1:1',
  'postgres://postgres@127.0.0.1:1/test',
  'mysql://root@127.0.0.1:1/test',
  'redis://127.0.0.1:1,mysql://root@127.0.0.1:1/test', // a multi-store set with every member down
];

function run(args: string[]): { status: number | null; stderr: string; ms: number } {
  assertBuilt();
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: cleanEnv(), timeout: 20_000 });
  return { status: r.status, stderr: r.stderr, ms: Date.now() - t0 };
}

/** Like run, without blocking this process's event loop (a listener here must keep its port). */
function runAsync(args: string[]): Promise<{ status: number | null; stderr: string }> {
  assertBuilt();
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [BIN, ...args], { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
    c.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ status: code, stderr });
    });
  });
}

describe('an unreachable store', () => {
  it.each(STORES)(
    '%s: tag list and serve exit 1 within the connect timeout, naming 127.0.0.1:1',
    (store) => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-unreachable-'));
      for (const args of [
        ['tag', 'list', '--store', store, '--state-dir', join(dir, 'state')],
        ['serve', '--port', '0', '--store', store, '--state-dir', join(dir, 'state'), '--log-level', 'warn'],
      ]) {
        const r = run(args);
        expect({ args: args.slice(0, 2), status: r.status }).toEqual({ args: args.slice(0, 2), status: 1 });
        expect(r.stderr).toContain('STORE_UNAVAILABLE');
        expect(r.stderr).toContain('127.0.0.1:1');
        expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
        expect(r.ms).toBeLessThan(10_000); // connect timeout 2 s, plus start-up
      }
    },
    60_000,
  );
});

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('a start that fails after the store connected (Redis)', () => {
  const store = () => {
    const p = `sequoia-start-${Math.random().toString(36).slice(2, 8)}`;
    return `${REDIS_URL}?keyPrefix=${p}:tag:&tagsKey=${p}:tags`;
  };

  it('a worker-id provider that cannot work exits 2, not hanging on the open store connection', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-failstart-'));
    const r = run([
      'serve',
      '--port',
      '0',
      '--store',
      store(),
      '--state-dir',
      dir,
      '--worker-id-provider',
      'k8s-ordinal',
      '--log-level',
      'warn',
    ]);
    expect(r.stderr).toMatch(/k8s-ordinal: hostname .* does not end in -<ordinal>|INVALID_ARGUMENT/);
    expect(r.status).toBe(2);
  }, 30_000);

  it('a port in use exits 1, naming the address', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-failstart-'));
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await runAsync([
        'serve',
        '--port',
        String(port),
        '--store',
        store(),
        '--state-dir',
        dir,
        '--worker-id-provider',
        'static:1',
        '--log-level',
        'warn',
      ]);
      expect(r.stderr).toContain(`127.0.0.1:${port}`);
      expect(r.status).toBe(1);
    } finally {
      blocker.close();
    }
  }, 30_000);
});
