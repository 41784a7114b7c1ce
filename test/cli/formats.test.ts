/**
 * The formats of issue 43 through the built command: TypeIDs, prefixed IDs
 * (`ord_…`) and date-stamped daily numbers. Each `gen daily` is its own
 * process, so every run is a restart; libfaketime sets each run's wall clock
 * (a clock stepped back over midnight between runs).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TypeID } from 'typeid-js';
import { BIN, assertBuilt, cleanEnv, sequoia } from '../helpers/cli.js';
import { fakeClockMissing } from '../helpers/fake-clock.js';
import { servicesRequired } from '../helpers/services.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-formats-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function refused(r: { status: number | null; stderr: string }, message: RegExp): void {
  expect(r.status).toBe(2);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at |\.js:\d+/); // no stack, no file path
}

describe('sequoia gen typeid / explain', () => {
  it('prints TypeIDs of the prefix that typeid-js reads, and explains them to their UUIDv7 time', () => {
    const before = Date.now();
    const ids = sequoia(['gen', 'typeid', '--prefix', 'user', '--count', '3']).stdout.trim().split('\n');
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(TypeID.fromString(id, 'user').toUUID()[14]).toBe('7');
    const d = JSON.parse(sequoia(['explain', ids[0]!]).stdout) as Record<string, unknown>;
    expect(d).toMatchObject({ id: ids[0], kind: 'typeid', prefix: 'user', version: 7, uuid: TypeID.fromString(ids[0]!).toUUID() });
    expect(d.timestampMs as number).toBeGreaterThanOrEqual(before - 5);
    refused(sequoia(['gen', 'typeid', '--prefix', 'User']), /INVALID_ARGUMENT: prefix "User" is not a TypeID prefix/);
    refused(sequoia(['explain', 'user_8zzzzzzzzzzzzzzzzzzzzzzzzz', '--layout', 'typeid']), /more than 128 bits/);
  });
});

describe('sequoia explain ord_…', () => {
  it('strips the prefix, decodes the ID and explains it, saying the prefix and format', () => {
    const d = JSON.parse(sequoia(['explain', 'ord_1TCKi1nFuNh']).stdout) as Record<string, unknown>;
    expect(d).toMatchObject({ id: 'ord_1TCKi1nFuNh', kind: 'snowflake', layout: 'twitter', prefix: 'ord', format: 'base62:11' });
    expect(d.value).toBe('1234567890123456789');
    const bare = JSON.parse(sequoia(['explain', '1234567890123456789']).stdout) as Record<string, unknown>;
    expect(d).toEqual({ ...bare, id: 'ord_1TCKi1nFuNh', prefix: 'ord', format: 'base62:11', value: '1234567890123456789' });
    const other = JSON.parse(
      sequoia(['explain', 'sk_live_000000000001A5', '--format', 'crockford32:13:check', '--layout', 'fallback']).stdout,
    );
    expect(other).toMatchObject({ kind: 'segment', prefix: 'sk_live', format: 'crockford32:13:check', value: '42' });
  });

  it('--store traces a prefixed snowflake ID to its worker-id lease like the bare ID', () => {
    const store = ['--store', `sqlite:${join(dir, 'lease.db')}`];
    const prefixed = sequoia(['explain', 'ord_1TCKi1nFuNh', ...store]);
    expect(prefixed.stderr).toBe('');
    const bare = JSON.parse(sequoia(['explain', '1234567890123456789', ...store]).stdout) as { lease: unknown };
    expect((JSON.parse(prefixed.stdout) as { lease: unknown }).lease).toEqual(bare.lease);
  });

  it('refuses a bad prefix or suffix with exit status 2 and says which', () => {
    refused(sequoia(['explain', 'Ord_1TCKi1nFuNh']), /is not a prefixed ID: expected a type prefix/);
    refused(sequoia(['explain', 'ord_1TCKi1nFuN']), /the part after the prefix is not an ID: base62 text must be 11 characters/);
    refused(sequoia(['explain', 'ord_1TCKi1nFu!h']), /the part after the prefix is not an ID/);
    refused(sequoia(['explain', 'sk_live_000000000001A6', '--format', 'crockford32:13:check']), /check symbol does not match/);
  });

  it('gen segment --prefix prints prefixed IDs that explain back to the IDs', () => {
    const store = ['--store', `sqlite:${join(dir, 'prefixed.db')}`, '--state-dir', join(dir, 'prefixed-state')];
    expect(sequoia(['tag', 'create', 'orders', ...store]).status).toBe(0);
    const ids = sequoia(['gen', 'segment', '--tag', 'orders', '--prefix', 'ord', '--count', '3', ...store])
      .stdout.trim()
      .split('\n');
    expect(ids).toEqual(['ord_00000000001', 'ord_00000000002', 'ord_00000000003']);
    const d = JSON.parse(sequoia(['explain', ids[2]!, '--layout', 'fallback']).stdout) as Record<string, unknown>;
    expect(d).toMatchObject({ kind: 'segment', prefix: 'ord', value: '3' });
    refused(sequoia(['gen', 'segment', '--tag', 'orders', '--prefix', 'Ord', ...store]), /prefix "Ord" is not a type prefix/);
    const next = sequoia(['gen', 'segment', '--tag', 'orders', ...store]).stdout.trim();
    expect(next).toBe('4'); // the refused call took no ID
  });
});

const fakeMissing = fakeClockMissing();
if (fakeMissing !== undefined && servicesRequired) throw new Error(`libfaketime is required: ${fakeMissing}`);
if (fakeMissing !== undefined) console.warn(`[sequoia tests] SKIPPING gen daily clock runs: ${fakeMissing}`);

/** `sequoia gen daily` with its wall clock at `at` (libfaketime: starts there and runs on). */
function genDailyAt(at: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  assertBuilt();
  const child = spawn(process.execPath, [BIN, 'gen', 'daily', ...args], {
    env: {
      ...cleanEnv(),
      TZ: 'UTC',
      LD_PRELOAD: '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
      FAKETIME: `@${at}`,
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

describe.skipIf(fakeMissing !== undefined)('sequoia gen daily', () => {
  it('restarts, two processes at once, a clock stepped back over midnight in Asia/Shanghai: no repeat, the day never goes back', async () => {
    const db = `sqlite:${join(dir, 'daily.db')}`;
    const run = async (at: string, state: string, count: number, extra: string[] = []) => {
      const r = await genDailyAt(at, [
        '--tag',
        'ORD',
        '--time-zone',
        'Asia/Shanghai',
        '--count',
        String(count),
        '--store',
        db,
        '--state-dir',
        join(dir, state),
        ...extra,
      ]);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      return r.stdout.trim().split('\n');
    };
    const seen = new Set<string>();
    const fresh = (ns: string[]) => {
      for (const n of ns) {
        expect(seen.has(n), `${n} twice`).toBe(false);
        seen.add(n);
      }
      return ns;
    };
    // 15:50 UTC is 23:50 on the 5th in Shanghai (ten minutes: a loaded machine may take seconds to start node, and the
    // faked clock runs from the start); 16:00:01 UTC is the 6th there, still the 5th in UTC.
    expect(fresh(await run('2026-12-05 15:50:00', 'a', 3))).toEqual(['20261205-000001', '20261205-000002', '20261205-000003']);
    expect(fresh(await run('2026-12-05 16:00:01', 'a', 2))).toEqual(['20261206-000001', '20261206-000002']);
    // The clock stepped back before midnight, a restart: still the 6th, counters go on.
    expect(fresh(await run('2026-12-05 15:50:30', 'a', 2))).toEqual(['20261206-000003', '20261206-000004']);
    // A second server (its own state dir) with the clock behind, both at once: the 6th, nothing twice.
    const [a, b] = await Promise.all([run('2026-12-05 15:50:40', 'a', 300), run('2026-12-05 15:50:40', 'b', 300)]);
    fresh(a);
    fresh(b);
    expect([...a, ...b].every((n) => /^20261206-\d{6}$/.test(n))).toBe(true);
    // The same instant in UTC is still the 5th: another tag, its own counter.
    // With a check symbol (which `explain --layout daily:check` verifies); the counter is wherever the ranges left it.
    const [checked] = fresh(await run('2026-12-05 16:00:01', 'a', 1, ['--check']));
    expect(checked).toMatch(/^20261206-\d{6}[0-9A-Z*~$=]$/);
    const d = JSON.parse(sequoia(['explain', checked!, '--layout', 'daily:check']).stdout) as Record<string, unknown>;
    expect(d).toMatchObject({ kind: 'daily', day: '2026-12-06', counter: String(Number(checked!.slice(9, 15))) });
    // The same instant in UTC is still the 5th: another tag, its own counter.
    const utc = await genDailyAt('2026-12-05 16:00:01', [
      '--tag',
      'ORDUTC',
      '--time-zone',
      'UTC',
      '--store',
      db,
      '--state-dir',
      join(dir, 'a'),
    ]);
    expect(utc.stdout.trim()).toBe('20261205-000001');
    refused(
      await genDailyAt('2026-12-05 16:00:01', ['--tag', 'ORD', '--time-zone', 'Mars/Olympus', '--store', db]),
      /--time-zone "Mars\/Olympus" is not an IANA time zone/,
    );
  }, 60_000);
});
