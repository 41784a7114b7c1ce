/**
 * The shipped alert rules with the real promtool: their unit tests
 * (ops/prometheus/sequoia-alerts.test.yml), which must hold for every alert a
 * healthy-server case where it stays silent and a case where it fires; the
 * compose Prometheus config checked as it is in the checkout; and the rules
 * of the Kubernetes PrometheusRule.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ROOT } from '../helpers/cli.js';
import { describePromtool, PROMTOOL } from '../helpers/promtool.js';

interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
}
interface UnitTest {
  input_series: { series: string; values: string }[];
  alert_rule_test?: AlertTest[];
}
const readYaml = <T>(path: string): T => parse(readFileSync(join(ROOT, path), 'utf8')) as T;
const rules = readYaml<{ groups: { rules: { alert: string }[] }[] }>('ops/prometheus/sequoia-alerts.yml');
const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert));
const unitFile = readFileSync(join(ROOT, 'ops/prometheus/sequoia-alerts.test.yml'), 'utf8');
const unitTests = (parse(unitFile) as { tests: UnitTest[] }).tests;
const promtool = (args: string[], cwd = ROOT): string =>
  execFileSync(PROMTOOL as string, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

it('the unit tests hold, for every shipped alert, the recorded healthy series where it stays silent and a case where it fires', () => {
  const recorded = /# BEGIN recorded healthy series[^\n]*\n([\s\S]*?)# END recorded healthy series/.exec(unitFile);
  expect(recorded, 'the block scripts/record-healthy-series.mjs writes').not.toBeNull();
  const healthy = (parse(recorded![1]!) as UnitTest[])[0]!;
  expect(healthy.input_series.length).toBeGreaterThan(10);
  for (const alert of alerts) {
    const silent = healthy.alert_rule_test!.filter((t) => t.alertname === alert);
    expect(silent.length, `${alert} checked on the healthy series`).toBeGreaterThan(10);
    expect(silent.every((t) => (t.exp_alerts ?? []).length === 0)).toBe(true);
    const fires = unitTests.some((u) => u.alert_rule_test?.some((t) => t.alertname === alert && (t.exp_alerts ?? []).length > 0));
    expect(fires, `${alert} has a case where it fires`).toBe(true);
  }
});

describePromtool('alert rules (promtool)', () => {
  it('promtool test rules ops/prometheus/sequoia-alerts.test.yml passes', () => {
    expect(promtool(['test', 'rules', 'sequoia-alerts.test.yml'], join(ROOT, 'ops/prometheus'))).toContain('SUCCESS');
  });

  it('the unit tests notice an alert that fires on the healthy series (the silent checks are not vacuous)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-alert-rules-'));
    try {
      // Every rule made always true: each healthy-series check must then fail, by name.
      const broken = structuredClone(rules) as { groups: { rules: { alert: string; expr: string; for?: string }[] }[] };
      for (const g of broken.groups)
        for (const r of g.rules) {
          r.expr = `vector(1)`;
          delete r.for;
        }
      writeFileSync(join(dir, 'sequoia-alerts.yml'), stringify(broken));
      writeFileSync(join(dir, 'sequoia-alerts.test.yml'), unitFile);
      let out = '';
      try {
        promtool(['test', 'rules', 'sequoia-alerts.test.yml'], dir);
      } catch (e) {
        // promtool reports the failed checks on stderr.
        out = String((e as { stderr?: string }).stderr);
      }
      for (const alert of alerts) expect(out, alert).toContain(`alertname: ${alert}, time: 0s`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('promtool check config deploy/prometheus/prometheus.yml passes as it is once the metrics token is made, from any directory', () => {
    // The token is deploy/secrets/metrics-token, which git ignores and the operator makes
    // (deploy/compose.yaml); the file is checked in a copy laid out the same way, with a stand-in token.
    const config = readYaml<{ scrape_configs: { authorization?: { credentials_file?: string } }[] }>('deploy/prometheus/prometheus.yml');
    const tokenFile = config.scrape_configs[0]!.authorization!.credentials_file!;
    expect(tokenFile).toBe('../secrets/metrics-token');
    expect(resolve(ROOT, 'deploy/prometheus', tokenFile)).toBe(join(ROOT, 'deploy/secrets/metrics-token'));
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-prometheus-config-'));
    try {
      mkdirSync(join(dir, 'prometheus'));
      cpSync(join(ROOT, 'deploy/prometheus/prometheus.yml'), join(dir, 'prometheus/prometheus.yml'));
      symlinkSync(join(ROOT, 'deploy/prometheus/rules'), join(dir, 'prometheus/rules'));
      mkdirSync(join(dir, 'secrets'));
      writeFileSync(join(dir, 'secrets/metrics-token'), 'stand-in-metrics-token\n');
      for (const [cwd, path] of [
        [join(dir, 'prometheus'), 'prometheus.yml'],
        [tmpdir(), join(dir, 'prometheus/prometheus.yml')],
      ] as const) {
        const out = promtool(['check', 'config', path], cwd);
        expect(out).toContain('SUCCESS: 1 rule files found');
        expect(out).toContain(`SUCCESS: ${alerts.length} rules found`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('promtool check rules passes on the spec of deploy/kubernetes/prometheusrule.yaml', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-prometheusrule-'));
    try {
      const spec = readYaml<{ spec: unknown }>('deploy/kubernetes/prometheusrule.yaml').spec;
      writeFileSync(join(dir, 'spec.yml'), stringify(spec));
      expect(promtool(['check', 'rules', join(dir, 'spec.yml')])).toContain(`SUCCESS: ${alerts.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
