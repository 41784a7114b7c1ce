/**
 * The workers of one server open the same state dir and store file at the
 * same instant. Switching a new file to WAL can be refused with SQLITE_BUSY
 * at once (SQLite's deadlock avoidance skips the busy timeout); the torture
 * harness saw a `--workers 2` server fail to start on it. Many processes
 * opening one fresh file together must all succeed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, cleanEnv } from '../helpers/cli.js';

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('opening one fresh SQLite file from many processes at once', () => {
  beforeAll(() => assertBuilt());

  it('every process opens the store and the state dir (6 rounds of 8 processes)', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 6; round++) {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-open-race-'));
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          // fence of an unknown tag opens the state dir and the store, then refuses the tag (exit 1, not a crash)
          i % 2 === 0
            ? run(['tag', 'list', '--store', `sqlite:${join(dir, 'store.db')}`])
            : run(['fence', 'no-such-tag', '--to', '10', '--store', `sqlite:${join(dir, 'store.db')}`, '--state-dir', dir]),
        ),
      );
      for (const r of results) if (/SQLITE_BUSY|cannot open/.test(r.stderr)) failures.push(r.stderr.trim());
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
