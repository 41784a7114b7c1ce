/**
 * `sequoia audit` times its run on the monotonic clock (issue 28 item 5: every
 * interval and timeout). Before, a wall clock stepped back during the run
 * (NTP) reported a negative duration, and the progress line, throttled on the
 * wall clock, stopped being drawn until the clock caught up.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, expect, it, vi } from 'vitest';
import { registerAudit } from '../../src/cli/audit-command.js';

const DAY_MS = 24 * 3600_000;
let dir: string | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

it('reports a duration of zero or more while the wall clock steps back a day at every reading', async () => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-audit-clock-'));
  const file = join(dir, 'ids.txt');
  writeFileSync(file, '1\n2\n3\n');
  const printed: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((s: unknown) => void printed.push(String(s)));
  let wall = Date.now();
  vi.spyOn(Date, 'now').mockImplementation(() => (wall -= DAY_MS));
  const program = new Command().exitOverride();
  registerAudit(program);
  await program.parseAsync(['audit', file, '--layout', 'twitter', '--json', '--no-progress'], { from: 'user' });
  vi.restoreAllMocks();
  process.exitCode = undefined;
  const report = JSON.parse(printed.join('\n')) as { summary: { count: number; seconds: number } };
  expect(report.summary.count).toBe(3);
  expect(report.summary.seconds).toBeGreaterThanOrEqual(0);
});
