/**
 * A store that cannot be reached ends `serve` and `tag list` with exit status
 * 1 within the connect timeout, naming host and port: for every networked
 * store kind (nothing listens on 127.0.0.1:1). A client that keeps
 * reconnecting in the background must not keep the process alive.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertBuilt, BIN, cleanEnv } from '../helpers/cli.js';

const STORES = ['redis://127.0.0.1:1', 'postgres://postgres@127.0.0.1:1/test', 'mysql://root@127.0.0.1:1/test'];

function run(args: string[]): { status: number | null; stderr: string; ms: number } {
  assertBuilt();
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: cleanEnv(), timeout: 20_000 });
  return { status: r.status, stderr: r.stderr, ms: Date.now() - t0 };
}

describe('an unreachable store', () => {
  it.each(STORES)('%s: tag list and serve exit 1 within the connect timeout, naming 127.0.0.1:1', (store) => {
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
  }, 60_000);
});
