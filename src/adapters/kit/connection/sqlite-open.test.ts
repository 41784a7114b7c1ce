import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { openSqlite, retryWhileBusy } from './sqlite-open.js';

const busy = (): Error => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

/** Busy twice, then open: retried within a 1 s timeout, the third attempt's value comes back. */
function expectOpenOnThirdTry(): void {
  let calls = 0;
  const value = retryWhileBusy(() => {
    calls++;
    if (calls < 3) throw busy();
    return 'open';
  }, 1000);
  expect(value).toBe('open');
  expect(calls).toBe(3);
}

describe('retryWhileBusy', () => {
  it('tries again after SQLITE_BUSY and returns the first success', () => {
    expectOpenOnThirdTry();
  });

  it('passes any other error through at once', () => {
    let calls = 0;
    const corrupt = Object.assign(new Error('file is not a database'), { code: 'SQLITE_NOTADB' });
    expect(() =>
      retryWhileBusy(() => {
        calls++;
        throw corrupt;
      }, 1000),
    ).toThrow(corrupt);
    expect(calls).toBe(1);
  });

  it('gives up with the busy error once the timeout has passed', () => {
    let t = 0;
    let calls = 0;
    expect(() =>
      retryWhileBusy(
        () => {
          calls++;
          t += 40;
          throw busy();
        },
        100,
        () => t,
      ),
    ).toThrow(/locked/);
    expect(calls).toBe(3);
  });

  it('times its timeout on the monotonic clock: a wall clock stepped forward meanwhile does not end it early', () => {
    let wall = Date.now();
    const stepped = vi.spyOn(Date, 'now').mockImplementation(() => (wall += 24 * 3600_000));
    try {
      expectOpenOnThirdTry();
    } finally {
      stepped.mockRestore();
    }
  });
});

describe('openSqlite', () => {
  it('retries the whole open when set-up meets SQLITE_BUSY, closing the failed handle', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sequoia-open-')), 'x.db');
    const handles: { open: boolean }[] = [];
    let calls = 0;
    const db = openSqlite(path, 1000, (d) => {
      handles.push(d);
      calls++;
      if (calls === 1) throw busy();
      d.exec('CREATE TABLE IF NOT EXISTS t (x INTEGER)');
    });
    expect(calls).toBe(2);
    expect(handles[0]!.open).toBe(false);
    expect(db.open).toBe(true);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    db.close();
  });
});
