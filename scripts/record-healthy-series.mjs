// Records a healthy server's /metrics and writes it into ops/prometheus/sequoia-alerts.test.yml
// as the "healthy server" test case: every shipped alert must stay silent on it.
//
//   npm run build && node scripts/record-healthy-series.mjs [--minutes 8] [--rate 20] [--every 15]
//
// It starts the built server (the package's bin, dist/pkg/cli.js) with default settings and a
// SQLite store in a temporary directory (so the default worker-id lease on that store too),
// creates one tag, draws `--rate` segment IDs a second from it and one snowflake ID a second,
// and scrapes /metrics every `--every` seconds (compose's Prometheus scrapes every 15 s) for
// `--minutes`. Only the series the rules read are written (names found in their expressions),
// with the job and instance labels Prometheus adds; the case checks every alert at every
// evaluation step. The test file's block between the BEGIN/END markers is replaced.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, URL } from 'node:url';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { inputSeriesYaml, parseExposition, scrapeFor, toInputSeries } from './prom-series.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: { minutes: { type: 'string', default: '8' }, rate: { type: 'string', default: '20' }, every: { type: 'string', default: '15' } },
});
const minutes = Number(args.minutes);
const rate = Number(args.rate);
const every = Number(args.every);

const rules = parse(readFileSync(join(root, 'ops/prometheus/sequoia-alerts.yml'), 'utf8'));
const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert));
const read = new Set(
  rules.groups.flatMap((g) => g.rules.flatMap((r) => [...r.expr.matchAll(/\b(sequoia_[a-z_]+|up)\b/g)].map((m) => m[1]))),
);

const dir = mkdtempSync(join(tmpdir(), 'sequoia-healthy-'));
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SEQUOIA_')));
const child = spawn(
  process.execPath,
  [join(root, 'dist/pkg/cli.js'), 'serve', '--port', '0', '--store', `sqlite:${dir}/sequoia.db`, '--state-dir', dir],
  {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let log = '';
const url = await new Promise((resolve, reject) => {
  child.stdout.on('data', (d) => {
    log += d;
    const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/.exec(log);
    if (m) resolve(m[1]);
  });
  child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${log}`)));
});
const version = /"version":"([^"]+)"/.exec(log)?.[1] ?? '?';

try {
  const created = await globalThis.fetch(`${url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tag: 'orders' }),
  });
  if (!created.ok) throw new Error(`POST /v1/tags: ${created.status} ${await created.text()}`);
  let stop = false;
  let drawn = 0;
  // Steady traffic: `rate` IDs a second in ten requests, and one snowflake ID a second.
  const traffic = (async () => {
    for (let i = 0; !stop; i++) {
      const n = Math.floor((rate * (i + 1)) / 10) - Math.floor((rate * i) / 10);
      if (n > 0) {
        const r = await globalThis.fetch(`${url}/v1/segment/orders?count=${n}`);
        if (!r.ok) throw new Error(`segment: ${r.status} ${await r.text()}`);
        drawn += n;
      }
      if (i % 10 === 0) await globalThis.fetch(`${url}/v1/snowflake`);
      await sleep(100);
    }
  })();
  const scrapes = await scrapeFor(`${url}/metrics`, {
    everyMs: every * 1000,
    forMs: minutes * 60_000,
    onScrape: (n) => process.stderr.write(`scrape ${n} (${drawn} IDs drawn)\n`),
  });
  stop = true;
  await traffic;
  const instance = new URL(url).host;
  const series = toInputSeries(scrapes, {
    intervalMs: every * 1000,
    labels: [
      ['instance', instance],
      ['job', 'sequoia'],
    ],
    keep: (name) => read.has(name),
  });
  const ttl = parseExposition(scrapes.at(-1).text ?? '').find((x) => x.name === 'sequoia_worker_lease_ttl_seconds')?.value ?? '?';
  const perSecond = (drawn / ((scrapes.at(-1).atMs - scrapes[0].atMs) / 1000)).toFixed(1);
  const steps = Math.round((scrapes.at(-1).atMs - scrapes[0].atMs) / (every * 1000));
  const checks = [];
  for (let s = 0; s <= steps; s++)
    for (const a of alerts) checks.push(`      - { eval_time: ${s * every}s, alertname: ${a}, exp_alerts: [] }`);
  const block = [
    '  # BEGIN recorded healthy series (scripts/record-healthy-series.mjs writes this block)',
    `  # Recorded ${new Date(scrapes[0].atMs).toISOString()} from sequoia ${version}: \`serve --store sqlite:<tmp>/sequoia.db`,
    `  # --state-dir <tmp>\`, every other setting its default (worker-id lease, TTL ${ttl} s, on the`,
    `  # same store); one tag created with its default step, ${perSecond} segment IDs/s and 1 snowflake ID/s drawn`,
    `  # throughout; /metrics scraped every ${every} s for ${minutes} min. Every alert is checked at every step.`,
    `  - interval: ${every}s`,
    '    input_series:',
    inputSeriesYaml(series, 6),
    '    alert_rule_test:',
    ...checks,
    '  # END recorded healthy series',
  ].join('\n');
  const file = join(root, 'ops/prometheus/sequoia-alerts.test.yml');
  const text = readFileSync(file, 'utf8');
  const m = /^ {2}# BEGIN recorded healthy series[^\n]*\n[\s\S]*?^ {2}# END recorded healthy series\n/m.exec(text);
  if (!m) throw new Error(`${file}: no BEGIN/END recorded healthy series block to replace`);
  writeFileSync(file, text.replace(m[0], `${block}\n`));
  process.stderr.write(`wrote ${series.length} series, ${scrapes.length} scrapes, ${checks.length} checks into ${file}\n`);
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
