/**
 * deploy/systemd/sequoia.service: `systemd-analyze verify` accepts it. verify
 * exits 0 even when it rejects a setting (it prints `UNIT:LINE: Failed to
 * parse …, ignoring`), so any output line naming the unit is a failure. The
 * hardening is scored offline with `systemd-analyze security`. Needs Debian's
 * `systemd` package (.ci/run installs it): skipped with a message without it,
 * a failure under SEQUOIA_REQUIRE_SERVICES=1.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeWithService } from '../helpers/services.js';
import { parseUnit, read, root } from './deploy-files.js';

const UNIT = 'sequoia.service';
const dir = mkdtempSync(join(tmpdir(), 'sequoia-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs verify on a unit file and answers the output lines that name it (what verify rejected). */
function verify(path: string, name: string): { status: number | null; complaints: string[]; output: string } {
  const r = spawnSync('systemd-analyze', ['verify', '--man=no', path], { encoding: 'utf8', timeout: 60_000 });
  const output = `${r.stdout}${r.stderr}`;
  return { status: r.status, complaints: output.split('\n').filter((l) => l.includes(name)), output };
}

const describeSystemd = await describeWithService('systemd-analyze (Debian package systemd)', async () => {
  execFileSync('systemd-analyze', ['--version'], { stdio: 'pipe' });
});

describeSystemd('systemd-analyze on deploy/systemd/sequoia.service', () => {
  it('verify accepts the unit: no output line names it', () => {
    const path = join(dir, UNIT);
    copyFileSync(join(root, 'deploy/systemd', UNIT), path);
    const r = verify(path, UNIT);
    expect(r.complaints, r.output).toEqual([]);
    expect(r.status).toBe(0);
  });

  it('the check can fail: a unit with a bad value and an unknown key is caught though verify exits 0', () => {
    const bad = read('deploy/systemd/sequoia.service').replace('ProtectSystem=strict', 'ProtectSystem=stricter\nTimeoutStopSeconds=30');
    const path = join(dir, 'sequoia-bad.service');
    writeFileSync(path, bad);
    const r = verify(path, 'sequoia-bad.service');
    expect(
      r.complaints.some((l) => /ProtectSystem|protect system/i.test(l)),
      r.output,
    ).toBe(true);
    expect(
      r.complaints.some((l) => l.includes('TimeoutStopSeconds')),
      r.output,
    ).toBe(true);
  });

  it('the offline security review rates the unit OK (exposure at most 2.0 of 10)', () => {
    const path = join(dir, UNIT);
    copyFileSync(join(root, 'deploy/systemd', UNIT), path);
    const r = spawnSync('systemd-analyze', ['security', '--offline=true', path], { encoding: 'utf8', timeout: 60_000 });
    const m = /Overall exposure level for \S+: ([0-9.]+)/.exec(`${r.stdout}${r.stderr}`);
    expect(m, `${r.stdout}${r.stderr}`).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(2.0);
  });
});

describe('the unit holds the hardening docs/deploy.md promises', () => {
  const unit = parseUnit(read('deploy/systemd/sequoia.service'));
  const service = unit.get('Service')!;
  const one = (key: string): string | undefined => {
    const v = service.get(key);
    if (v && v.length !== 1) throw new Error(`${key} given ${v.length} times`);
    return v?.[0];
  };

  it.each([
    ['DynamicUser', 'yes'],
    ['StateDirectory', 'sequoia'],
    ['ProtectSystem', 'strict'],
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['NoNewPrivileges', 'yes'],
    ['Restart', 'on-failure'],
    ['KillSignal', 'SIGTERM'],
    ['KillMode', 'mixed'],
    ['CapabilityBoundingSet', ''],
    ['EnvironmentFile', '/etc/sequoia/sequoia.env'],
  ])('%s=%s', (key, value) => {
    expect(one(key)).toBe(value);
  });

  it('runs the built CLI by path (not by package name), and no MemoryDenyWriteExecute (the JIT needs it)', () => {
    // The package's bin (entry-point.test.ts holds every start to it).
    const pkg = JSON.parse(read('package.json')) as { bin: { sequoia: string } };
    expect(one('ExecStart')).toBe(`node /opt/sequoia/${pkg.bin.sequoia} serve`);
    expect(one('WorkingDirectory')).toBe('/opt/sequoia');
    expect(service.has('MemoryDenyWriteExecute')).toBe(false);
    expect(unit.get('Install')?.get('WantedBy')).toEqual(['multi-user.target']);
  });
});
