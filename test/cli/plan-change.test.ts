/**
 * `sequoia plan --layout CURRENT --next NEW --from TIME` (issue 43): the
 * changes users have tried and that break IDs are refused (exit 2, with the
 * reason); safe ones are accepted, with what each version allows.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sequoia } from '../helpers/cli.js';

const TWITTER_EPOCH = 1288834974657;
const layout = (epochMs: number, timeBits: number, worker: number, sequence: number) => ({
  epochMs,
  timeBits,
  fields: [
    { name: 'worker', bits: worker, role: 'node' },
    { name: 'sequence', bits: sequence, role: 'sequence' },
  ],
});
const dir = mkdtempSync(join(tmpdir(), 'sequoia-plan-change-'));
const config = join(dir, 'sequoia.json');
writeFileSync(
  config,
  JSON.stringify({
    layouts: {
      wider: layout(TWITTER_EPOCH, 41, 12, 10),
      earlier: layout(TWITTER_EPOCH - 86_400_000, 41, 10, 12),
      'wide-64': layout(TWITTER_EPOCH, 42, 10, 12),
      later: layout(Date.UTC(2020, 0, 1), 41, 12, 10),
      shorter: layout(TWITTER_EPOCH, 40, 12, 11),
      narrow: layout(TWITTER_EPOCH, 41, 8, 14),
      orders: { lineage: [{ layout: 'twitter' }, { layout: 'wider', from: '2027-01-01T00:00:00Z' }] },
    },
  }),
);
const planNext = (current: string, next: string, from = '2027-01-01T00:00:00Z', json = false) =>
  sequoia(['plan', '--layout', current, '--next', next, '--from', from, '--config', config, ...(json ? ['--json'] : [])]);

describe('sequoia plan --next', () => {
  it.each([
    ['a later epoch', 'later', /unsafe: the epoch may only move earlier: later's 2020-01-01T00:00:00.000Z is after twitter's/],
    ['fewer time bits', 'shorter', /unsafe: fewer time bits \(41 → 40\): shorter's time field spans less than twitter's/],
    ['an equal width sum with the node field shrunk', 'narrow', /unsafe: the node fields shrink \(10 → 8 bits: 1024 → 256 worker ids\)/],
  ])('refuses %s: exit 2 with the reason', (_what, next, reason) => {
    const r = planNext('twitter', next);
    expect(r.status).toBe(2);
    expect(r.stdout).toMatch(/^safe {11}no$/m);
    expect(r.stdout).toMatch(reason);
    expect(r.stderr).toMatch(/^sequoia: INVALID_ARGUMENT: unsafe change: /);
  });

  it('accepts more worker bits, showing when each version runs out and what it allows', () => {
    const r = planNext('twitter', 'wider');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('current        twitter: 1024 workers, 4096 IDs per ms each, runs out 2080-07-10T17:30:30.209Z');
    expect(r.stdout).toContain('next           wider: 4096 workers, 1024 IDs per ms each, runs out 2080-07-10T17:30:30.209Z');
    expect(r.stdout).toMatch(/^safe {11}yes: every ID of wider is above every ID twitter issues before the cutover$/m);
  });

  it('accepts an earlier epoch', () => {
    expect(planNext('twitter', 'earlier').status).toBe(0);
  });

  it('a version whose IDs would pass 2^63 is a new version, and the plan lists what breaks', () => {
    const r = planNext('twitter', 'wide-64', '2027-01-01T00:00:00Z', true);
    expect(r.status, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as { safe: boolean; breaks: string[] };
    expect(c.safe).toBe(true);
    expect(c.breaks.join('\n')).toMatch(/BIGINT[\s\S]*Java and Kotlin long[\s\S]*JSON numbers above 2\^53[\s\S]*Protobuf int64/);
  });

  it('a lineage is checked from its last version; --from must come after its last cutover', () => {
    expect(planNext('orders', 'narrow', '2028-01-01T00:00:00Z').stdout).toMatch(/unsafe: the node fields shrink \(12 → 8 bits/);
    const early = planNext('orders', 'wider', '2026-06-01T00:00:00Z');
    expect(early.status).toBe(2);
    expect(early.stderr).toMatch(/--from must be after orders's last cutover \(2027-01-01T00:00:00.000Z\)/);
    expect(planNext('twitter', 'wider', 'next year').stderr).toMatch(/--from must be an ISO 8601 time with its zone/);
  });

  it('an unsafe lineage in the config file is refused naming the field', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        layouts: {
          narrow: layout(TWITTER_EPOCH, 41, 8, 14),
          orders: { lineage: [{ layout: 'twitter' }, { layout: 'narrow', from: '2027-01-01T00:00:00Z' }] },
        },
      }),
    );
    const r = sequoia(['plan', '--layout', 'orders', '--config', bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /layouts \(from .*bad\.json\): layout "orders": lineage\[1\] \(narrow\) from 2027-01-01T00:00:00.000Z: the node fields shrink/,
    );
  });
});
