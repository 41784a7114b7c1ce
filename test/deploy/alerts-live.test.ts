/**
 * Every shipped alert stays silent on a healthy server (DESIGN "Deployment"): a real server
 * (the package's bin, built dist/) with default settings, a SQLite store in a temporary
 * directory and so the default worker-id lease on it, is scraped every second for 60 s of real
 * time; the samples become a `promtool test rules` input file (scripts/prom-series.mjs: each
 * scrape at its real offset, with the `job`/`instance` labels and the `up` series Prometheus
 * adds), and promtool evaluates every rule of ops/prometheus/sequoia-alerts.yml on it at every
 * second. The rules are evaluated with their `for:` removed: 60 s is shorter than most of them,
 * and a condition that holds on a healthy server at all is the defect (a rule that fires with
 * `for:` holds without it too).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { parseExposition, scrapeFor, toInputSeries } from '../../scripts/prom-series.mjs';
import { PACKAGED_BIN, ROOT, type ServerProcess, startServe } from '../helpers/cli.js';
import { describePromtool, PROMTOOL } from '../helpers/promtool.js';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
}
const rules = parse(readFileSync(join(ROOT, 'ops/prometheus/sequoia-alerts.yml'), 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert));
/** Series a healthy server does not have: this one appears with the first reported conflict. */
const ONLY_ON_EVENTS = new Set(['sequoia_business_conflicts_total']);

let server: ServerProcess | undefined;
let dir: string | undefined;
afterAll(async () => {
  if (server) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describePromtool('shipped alerts on a real idle server', () => {
  it('none fires on 60 s of its /metrics, scraped every second', { timeout: 150_000 }, async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-alerts-live-'));
    server = await startServe(['--store', `sqlite:${join(dir, 'sequoia.db')}`, '--state-dir', dir], {}, PACKAGED_BIN);
    // One tag and one ID of each kind, so the segment series exist too; then nothing more.
    const created = await fetch(`${server.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag: `alerts-live-${process.pid}` }),
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${server.url}/v1/segment/alerts-live-${process.pid}`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/snowflake`)).status).toBe(200);

    const scrapes = await scrapeFor(`${server.url}/metrics`, { everyMs: 1000, forMs: 60_000 });
    expect(scrapes.filter((s) => s.text === undefined).length, 'failed scrapes').toBe(0);
    const seconds = Math.round((scrapes.at(-1)!.atMs - scrapes[0]!.atMs) / 1000);
    expect(seconds).toBeGreaterThanOrEqual(60);
    expect(scrapes.length).toBeGreaterThanOrEqual(30); // every 1-2 s even on a loaded machine

    // Not vacuous: every series a rule reads is in the scrapes (up comes with each scrape).
    const exposed = new Set(scrapes.flatMap((s) => parseExposition(s.text ?? '').map((x) => x.name)));
    exposed.add('up');
    const read = new Set(
      rules.groups.flatMap((g) => g.rules.flatMap((r) => [...r.expr.matchAll(/\b(sequoia_[a-z_]+|up)\b/g)].map((m) => m[1]!))),
    );
    expect([...read].filter((n) => !exposed.has(n) && !ONLY_ON_EVENTS.has(n))).toEqual([]);
    const ttl = parseExposition(scrapes.at(-1)!.text!).find((x) => x.name === 'sequoia_worker_lease_ttl_seconds');
    expect(ttl?.value, 'the default 10 s worker-id lease').toBe('10');

    const noFor = structuredClone(rules);
    for (const g of noFor.groups) for (const r of g.rules) delete r.for;
    writeFileSync(join(dir, 'rules.yml'), stringify(noFor));
    const input_series = toInputSeries(scrapes, {
      intervalMs: 1000,
      labels: [
        ['instance', new URL(server.url).host],
        ['job', 'sequoia'],
      ],
    });
    const alert_rule_test = [];
    for (let t = 0; t <= seconds; t++)
      for (const alertname of alerts) alert_rule_test.push({ eval_time: `${t}s`, alertname, exp_alerts: [] });
    writeFileSync(
      join(dir, 'live.test.yml'),
      stringify({ rule_files: ['rules.yml'], evaluation_interval: '1s', tests: [{ interval: '1s', input_series, alert_rule_test }] }),
    );
    const r = spawnSync(PROMTOOL!, ['test', 'rules', 'live.test.yml'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    // promtool names each alert that fired, with its labels and the time.
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
  });
});
