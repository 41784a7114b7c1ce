/**
 * The report of `sequoia bench pk`: a text table, and an SVG chart to paste
 * into a design review (four panels: insert rate, p99 latency, size, WAL/redo
 * bytes; the baseline drawn in grey). Pure functions of the result.
 */
import type { PkBenchResult, PkKindResult } from '../app/pk-bench.js';

export function formatBytes(n: number | null): string {
  if (n === null) return 'n/a';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

const ratio = (x: number | null): string => (x === null ? 'n/a' : `${x.toFixed(2)}×`);
const ms = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const int = (x: number): string => Math.round(x).toLocaleString('en-US');

export const PK_TABLE_HEADER = [
  'kind',
  'key column',
  'rows/s',
  'time ×seq',
  'p50 ms',
  'p99 ms',
  'table',
  'indexes',
  'size ×seq',
  'WAL/redo',
  'WAL ×seq',
  'page splits',
];

export function pkTableRows(result: PkBenchResult): string[][] {
  return result.results.map((r: PkKindResult) => [
    r.kind,
    r.keyColumn,
    int(r.rowsPerSecond),
    ratio(r.vsBaseline.time),
    ms(r.p50Ms),
    ms(r.p99Ms),
    formatBytes(r.tableBytes),
    formatBytes(r.indexBytes),
    ratio(r.vsBaseline.size),
    formatBytes(r.logBytes),
    ratio(r.vsBaseline.log),
    r.pageSplits === null ? 'n/a' : int(r.pageSplits),
  ]);
}

/** Aligned text; `markdown` gives a Markdown table instead (as docs/choosing-ids.md publishes). */
export function formatPkTable(result: PkBenchResult, markdown = false): string {
  const rows = [PK_TABLE_HEADER, ...pkTableRows(result)];
  if (markdown) {
    const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
    return [line(rows[0]!), line(rows[0]!.map((_, i) => (i < 2 ? '---' : '---:'))), ...rows.slice(1).map(line)].join('\n');
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => (c < 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function describeRun(result: PkBenchResult): string {
  const o = result.options;
  const settings = Object.entries(result.target.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return [
    `${result.target.version}, scratch ${result.target.scratch} (dropped)`,
    `${int(o.rows)} rows per kind after ${int(o.warmup)} warm-up rows; ${o.batch} rows per INSERT; ${o.concurrency} client(s); ` +
      `payload ${o.width} B; ${o.indexes} secondary index(es); ${o.servers} simulated ID servers (segment step ${o.step}); ${o.slices} interleaved slices; ${result.seconds.toFixed(1)} s`,
    `settings: ${settings}`,
    ...result.target.notes.map((n) => `note: ${n}`),
    ...(result.interrupted ? ['INTERRUPTED: the numbers cover the rows inserted before the signal'] : []),
  ].join('\n');
}

export function formatPkReport(result: PkBenchResult): string {
  return `${describeRun(result)}\n\n${formatPkTable(result)}\n\ntime ×seq: insert time per row against the database's own sequence (higher is slower); p50/p99: one INSERT statement, over the ${statementsOf(result)} measured per kind (up to ${result.options.batch} rows each; a slice's last is smaller); size: table + indexes after the run\n`;
}

/** The measured statements per kind, one number when every kind made as many (they insert the same rows in the same slices). */
function statementsOf(result: PkBenchResult): string {
  const counts = [...new Set(result.results.map((r) => r.statements))];
  return counts.length === 1 ? String(counts[0]) : `${Math.min(...counts)}-${Math.max(...counts)}`;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

interface Panel {
  readonly title: string;
  readonly value: (r: PkKindResult) => number | null;
  readonly label: (r: PkKindResult) => string;
}

/** The settings line of the chart: sizes in bytes shown in MiB. */
function chartSettings(result: PkBenchResult): string {
  return Object.entries(result.target.settings)
    .filter(([k]) => /buffer|shared_buffers|synchronous|flush_log|journal/.test(k))
    .map(([k, v]) => `${k}=${/^\d{7,}$/.test(v) ? formatBytes(Number(v)) : v}`)
    .join(', ');
}

/** A self-contained SVG (no fonts or scripts fetched) of the four measures, one bar per kind. */
export function pkChartSvg(result: PkBenchResult): string {
  const panels: Panel[] = [
    {
      title: 'insert rate, rows/s (higher is better)',
      value: (r) => r.rowsPerSecond,
      label: (r) => `${int(r.rowsPerSecond)} (${ratio(r.vsBaseline.time)} time)`,
    },
    { title: `p99 latency of one ${result.options.batch}-row INSERT, ms`, value: (r) => r.p99Ms, label: (r) => ms(r.p99Ms) },
    {
      title: 'table + index size after the run',
      value: (r) => r.totalBytes,
      label: (r) => `${formatBytes(r.totalBytes)} (${ratio(r.vsBaseline.size)})`,
    },
    {
      title: 'WAL / redo bytes written',
      value: (r) => r.logBytes,
      label: (r) => `${formatBytes(r.logBytes)} (${ratio(r.vsBaseline.log)})`,
    },
  ];
  const kinds = result.results;
  const barH = 18;
  const gap = 6;
  const labelW = 110;
  const panelW = 470;
  const barMax = panelW - labelW - 150;
  const panelH = 34 + kinds.length * (barH + gap);
  const top = 76;
  const width = panelW * 2 + 20;
  const height = top + panelH * 2 + 30;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="16" font-weight="bold">${esc(`sequoia bench pk: ${result.target.version}`)}</text>`,
    `<text x="10" y="42" fill="#444">${esc(
      `${int(result.options.rows)} rows per kind, ${result.options.batch} rows per INSERT, ${result.options.concurrency} client(s), payload ${result.options.width} B, ${result.options.indexes} secondary index(es)`,
    )}</text>`,
    `<text x="10" y="${top - 4}" fill="#666" font-size="11">${esc(chartSettings(result))}</text>`,
  ];
  panels.forEach((p, i) => {
    const x0 = 10 + (i % 2) * (panelW + 10);
    const y0 = top + Math.floor(i / 2) * panelH;
    out.push(`<text x="${x0}" y="${y0 + 16}" font-weight="bold">${esc(p.title)}</text>`);
    const max = Math.max(0, ...kinds.map((k) => p.value(k) ?? 0));
    kinds.forEach((k, j) => {
      const y = y0 + 26 + j * (barH + gap);
      const v = p.value(k);
      const w = v === null || max <= 0 ? 0 : Math.max(1, (v / max) * barMax);
      out.push(`<text x="${x0 + labelW - 6}" y="${y + barH - 5}" text-anchor="end">${esc(k.kind)}</text>`);
      out.push(
        `<rect x="${x0 + labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${k.kind === 'sequence' ? '#9e9e9e' : '#2e7d32'}"/>`,
      );
      out.push(
        `<text x="${(x0 + labelW + w + 5).toFixed(1)}" y="${y + barH - 5}" fill="#222">${esc(v === null ? 'n/a' : p.label(k))}</text>`,
      );
    });
  });
  out.push(
    `<text x="10" y="${height - 10}" fill="#666">${esc(`${result.startedAt}; grey: the database's own sequence (baseline)`)}</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
