// Scrapes of a server's GET /metrics turned into `promtool test rules` input series, so the
// shipped alert rules can be evaluated by promtool against what a real server exposed.
// Used by scripts/record-healthy-series.mjs (which wrote the healthy series in
// ops/prometheus/sequoia-alerts.test.yml) and by test/deploy/alerts-live.test.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';

/**
 * The samples of a Prometheus text exposition: `{ name, labels, value }`, labels as [name, raw
 * escaped value] pairs in the order given, the value as written (`+Inf`, `NaN`, `1.5e-7`…).
 */
export function parseExposition(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{|\s)/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const name = m[1];
    const labels = [];
    let i = name.length;
    if (line[i] === '{') {
      i++;
      while (line[i] !== '}') {
        const l = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(i));
        if (!l) throw new Error(`bad label in: ${line}`);
        i += l[0].length;
        let v = '';
        while (line[i] !== '"') {
          if (i >= line.length) throw new Error(`unterminated label value in: ${line}`);
          // Escapes (\\, \", \n) are kept as written: PromQL strings use the same ones.
          if (line[i] === '\\') v += line[i++];
          v += line[i++];
        }
        i++;
        labels.push([l[1], v]);
        if (line[i] === ',') i++;
      }
      i++;
    }
    const value = line.slice(i).trim().split(/\s+/)[0];
    if (value === undefined || value === '') throw new Error(`no value in: ${line}`);
    out.push({ name, labels, value });
  }
  return out;
}

/** A series as promtool's input_series names it: `name{a="x",b="y"}` (labels sorted). */
export function seriesName(name, labels) {
  const sorted = [...labels].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${name}{${sorted.map(([k, v]) => `${k}="${v}"`).join(',')}}`;
}

/** A sample value in promtool's series notation. */
function promtoolValue(v) {
  if (v === '+Inf') return 'Inf';
  if (v === '-Inf' || v === 'NaN') return v;
  if (!Number.isFinite(Number(v))) throw new Error(`not a sample value: ${v}`);
  return v;
}

/** Runs of one number (or `_`) written as promtool's `vxN` (v, then N more of it); promtool repeats nothing else that way. */
const NOT_REPEATABLE = new Set(['stale', 'Inf', '-Inf', 'NaN']);
function compress(values) {
  const out = [];
  for (let i = 0; i < values.length;) {
    let j = i + 1;
    while (j < values.length && values[j] === values[i]) j++;
    const n = j - i;
    if (n > 1 && !NOT_REPEATABLE.has(values[i])) out.push(`${values[i]}x${n - 1}`);
    else for (let k = i; k < j; k++) out.push(values[k]);
    i = j;
  }
  return out.join(' ');
}

/**
 * Scrapes as input series, one slot per `intervalMs` from the first scrape (a scrape at its real
 * offset, rounded; a later scrape in the same slot wins). Each scrape adds the labels Prometheus
 * adds (`job`, `instance`) and the series `up` (1, or 0 for a failed scrape, which also ends every
 * series, as Prometheus marks them stale). A series missing from a scrape that had it before
 * ends there (`stale`); a slot no scrape fell into is left empty (`_`).
 *
 * @param {{ atMs: number, text: string | undefined }[]} scrapes  text undefined: the scrape failed
 * @param {{ intervalMs: number, labels: [string, string][], keep?: (name: string) => boolean }} o
 * @returns {{ series: string, values: string }[]}
 */
export function toInputSeries(scrapes, o) {
  if (scrapes.length === 0) return [];
  const t0 = scrapes[0].atMs;
  const slots = new Map();
  for (const s of scrapes) slots.set(Math.round((s.atMs - t0) / o.intervalMs), s);
  const length = Math.max(...slots.keys()) + 1;
  const rows = new Map();
  const row = (key) => {
    let r = rows.get(key);
    if (r === undefined) {
      r = new Array(length).fill('_');
      rows.set(key, r);
    }
    return r;
  };
  const live = new Set();
  for (let slot = 0; slot < length; slot++) {
    const s = slots.get(slot);
    if (s === undefined) continue;
    const seen = new Set();
    const up = seriesName('up', o.labels);
    row(up)[slot] = s.text === undefined ? '0' : '1';
    for (const sample of s.text === undefined ? [] : parseExposition(s.text)) {
      if (o.keep && !o.keep(sample.name)) continue;
      const key = seriesName(sample.name, [...sample.labels, ...o.labels]);
      row(key)[slot] = promtoolValue(sample.value);
      seen.add(key);
    }
    for (const key of live) if (!seen.has(key)) row(key)[slot] = 'stale';
    live.clear();
    for (const key of seen) live.add(key);
  }
  return [...rows].map(([series, values]) => ({ series, values: compress(values) }));
}

/**
 * GET `url` every `everyMs` (from the start of one to the start of the next; a slow answer
 * delays the next) until `forMs` have passed; each scrape with its wall-clock time. A failed
 * scrape is kept as such (text undefined), as Prometheus records `up 0`.
 *
 * @param {string} url  the /metrics URL
 * @param {{ everyMs: number, forMs: number, headers?: Record<string, string>, onScrape?: (n: number) => void }} o
 * @returns {Promise<{ atMs: number, text: string | undefined }[]>}
 */
export async function scrapeFor(url, o) {
  const out = [];
  const start = performance.now();
  for (let next = start; next - start <= o.forMs; next += o.everyMs) {
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    const atMs = Date.now();
    let text;
    try {
      const res = await globalThis.fetch(url, { headers: o.headers ?? {}, signal: globalThis.AbortSignal.timeout(10_000) });
      text = res.ok ? await res.text() : undefined;
    } catch {
      text = undefined;
    }
    out.push({ atMs, text });
    o.onScrape?.(out.length);
  }
  return out;
}

/** `input_series` entries as YAML lines (indented by `indent`), for a promtool test file. */
export function inputSeriesYaml(series, indent) {
  const pad = ' '.repeat(indent);
  return series.flatMap((s) => [`${pad}- series: '${s.series.replace(/'/g, "''")}'`, `${pad}  values: '${s.values}'`]).join('\n');
}
