/**
 * Small truths a newcomer hits (issue 26), on the built CLI: help texts say
 * what the options do, TAG_NOT_FOUND names the commands that list and create
 * tags, and Ctrl-C during a long `gen snowflake` says what happened and gives
 * the worker id back.
 */
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { BIN, assertBuilt, cleanEnv, sequoia } from '../helpers/cli.js';

describe('help texts', () => {
  it('serve --help gives --rate-limit-burst one default, not "default none" as well', () => {
    const r = sequoia(['serve', '--help']);
    expect(r.status).toBe(0);
    const burst = r.stdout.replace(/\n\s+/g, ' ').match(/--rate-limit-burst <value>.*?\)(?: \(env [A-Z_]+\))?/)?.[0];
    expect(burst).toContain('2 × rate-limit');
    expect(burst).not.toContain('default none');
    // a field without a default still says so
    expect(r.stdout.replace(/\n\s+/g, ' ')).toMatch(/--admin-token <value>.*?default none\)/);
  });

  it('gen --help says --store serves gen segment too', () => {
    const r = sequoia(['gen', '--help']);
    expect(r.status).toBe(0);
    const store = r.stdout.replace(/\n\s+/g, ' ').match(/--store <url>.*?\)/)?.[0];
    expect(store).toContain('snowflake:');
    expect(store).toContain('segment:');
  });
});

describe('TAG_NOT_FOUND', () => {
  it('names the commands that list and create tags', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-nf-'));
    const r = sequoia(['gen', 'segment', '--tag', 'nope', '--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', dir]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('sequoia: TAG_NOT_FOUND: tag "nope" does not exist');
    expect(r.stderr).toContain('sequoia tag list');
    expect(r.stderr).toContain('sequoia tag create nope');
  });
});

describe('Ctrl-C during gen snowflake --count 100000', () => {
  it('prints a message, exits 130 and gives its worker id back', async () => {
    assertBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-int-'));
    const db = join(dir, 'ids.db');
    // sonyflake: 256 IDs per 10 ms tick, so 100,000 IDs take about 4 s: time to interrupt.
    const child = spawn(
      process.execPath,
      [BIN, 'gen', 'snowflake', '--layout', 'sonyflake', '--count', '100000', '--store', `sqlite:${db}`],
      {
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const leases = (): Array<{ worker_id: number; expires_at: number }> => {
      if (!existsSync(db)) return [];
      const d = new Database(db, { readonly: true, timeout: 5000 });
      try {
        return d.prepare('SELECT worker_id, expires_at FROM sequoia_worker_lease').all() as Array<{
          worker_id: number;
          expires_at: number;
        }>;
      } catch {
        return []; // the table is not there yet
      } finally {
        d.close();
      }
    };
    // Interrupt once the lease is held (generation has started).
    const deadline = Date.now() + 30_000;
    while (!leases().some((l) => l.expires_at > Date.now()) && Date.now() < deadline) await sleep(50);
    expect(
      leases().some((l) => l.expires_at > Date.now()),
      stderr,
    ).toBe(true);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^sequoia: interrupted after \d+ of 100000 IDs \(none printed\); the worker id is given back\n$/);
    // given back: the lease row is expired at once (expires_at 0), not left to run out
    expect(leases().map((l) => l.expires_at)).toEqual([0]);
  });
});
