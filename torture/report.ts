/** The torture report: one row per scenario, as Markdown and as JSON. */
import type { CheckResult, Finding } from './checker.js';

export interface ScenarioReport {
  readonly name: string;
  /** What the scenario does, one line. */
  readonly about?: string | undefined;
  readonly seed: number;
  readonly seconds: number;
  /** Set when the scenario itself failed (a server that would not start, a store that did not come up). */
  readonly failure?: string | undefined;
  /** What the scenario expected and saw beyond the checker (e.g. "start refused after the clock stepped back"). */
  readonly notes: readonly string[];
  /** Set when the combination is refused by design and the refusal was asserted: what was seen. */
  readonly refused?: string | undefined;
  readonly result: CheckResult;
}

export interface RunReport {
  readonly date: string;
  readonly commit: string;
  readonly set: string;
  readonly seed: number;
  readonly scenarios: readonly ScenarioReport[];
  readonly idsChecked: number;
  readonly repeats: number;
  readonly ok: boolean;
}

/** A scenario passes when no promise broke and it ran to its end (a refusal by design counts, and is reported as such). */
export function passed(s: ScenarioReport): boolean {
  return s.failure === undefined && s.result.ok;
}

export function outcome(s: ScenarioReport): 'pass' | 'refused as designed' | 'FAIL' {
  if (!passed(s)) return 'FAIL';
  return s.refused === undefined ? 'pass' : 'refused as designed';
}

/**
 * Why a scenario that ran to its end still fails: a fault it set up never
 * took effect, or it checked no ID at all without asserting a refusal.
 * Neither may read as a pass.
 */
export function emptyEvidence(idsChecked: number, refused: string | undefined, faultsNotSeen: readonly string[]): string | undefined {
  if (faultsNotSeen.length > 0) return `fault did not take effect: ${faultsNotSeen.join('; ')}`;
  if (refused !== undefined) return idsChecked === 0 ? undefined : `reported a refusal by design but ${idsChecked} IDs were issued`;
  if (idsChecked === 0) return 'checked 0 IDs: a scenario that checked nothing is not a pass';
  return undefined;
}

export function summarize(set: string, seed: number, commit: string, scenarios: readonly ScenarioReport[]): RunReport {
  return {
    date: new Date().toISOString(),
    commit,
    set,
    seed,
    scenarios,
    idsChecked: scenarios.reduce((n, s) => n + s.result.idsChecked, 0),
    repeats: scenarios.reduce((n, s) => n + s.result.counts.repeats, 0),
    ok: scenarios.every(passed),
  };
}

const codes = (e: Record<string, number>): string =>
  Object.keys(e).length === 0
    ? '–'
    : Object.entries(e)
        .sort((a, b) => b[1] - a[1])
        .map(([c, n]) => `${c} ${n}`)
        .join(', ');

function findingLines(title: string, list: readonly Finding[], count: number): string[] {
  if (count === 0) return [];
  const out = [`- **${title}: ${count}**${count > list.length ? ` (first ${list.length} shown)` : ''}`];
  for (const f of list) {
    const h = (x: Finding['first']) =>
      x === undefined ? '' : `${x.client}→${x.server}${x.pid === undefined ? '' : `/pid ${x.pid}`} @${new Date(x.start).toISOString()}`;
    out.push(`  - \`${f.key}\` ${f.id}: ${f.detail}${f.first ? `; first ${h(f.first)}` : ''}${f.second ? `; then ${h(f.second)}` : ''}`);
  }
  return out;
}

export function toMarkdown(r: RunReport): string {
  const lines = [
    `# Torture report: ${r.set} set`,
    '',
    `Date ${r.date} · commit \`${r.commit}\` · seed ${r.seed} · **${r.ok ? 'PASS' : 'FAIL'}** · ${r.idsChecked} IDs checked, ${r.repeats} repeats`,
    '',
    '| scenario | result | IDs checked | repeats | short batches | outside | order broken | no ledger row | errors by code | availability % | p50 ms | p99 ms | gap rate | s |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const s of r.scenarios) {
    const c = s.result;
    lines.push(
      `| ${s.name} | ${outcome(s) === 'FAIL' ? '**FAIL**' : outcome(s)} | ${c.idsChecked} | ${c.counts.repeats} | ${c.counts.shortBatches} | ${c.counts.outside} | ${c.counts.orderBroken} | ${c.counts.unledgered} | ${codes(c.errorsByCode)} | ${c.availability} | ${c.p50Ms} | ${c.p99Ms} | ${c.gapRate.toFixed(4)} | ${s.seconds} |`,
    );
  }
  for (const s of r.scenarios) {
    const detail = [
      ...(s.about ? [`- *${s.about}*`] : []),
      ...(s.failure ? [`- **scenario failed**: ${s.failure}`] : []),
      ...(s.refused ? [`- refused as designed: ${s.refused}`] : []),
      ...s.notes.map((n) => `- ${n}`),
      ...findingLines('repeats', s.result.repeats, s.result.counts.repeats),
      ...findingLines('short batches', s.result.shortBatches, s.result.counts.shortBatches),
      ...findingLines('IDs outside the layout or tag', s.result.outside, s.result.counts.outside),
      ...findingLines('order broken', s.result.orderBroken, s.result.counts.orderBroken),
      ...findingLines('IDs covered by no range of the ledger', s.result.unledgered, s.result.counts.unledgered),
    ];
    if (detail.length > 0) lines.push('', `## ${s.name} (seed ${s.seed})`, '', ...detail);
  }
  return `${lines.join('\n')}\n`;
}

export function toJson(r: RunReport): string {
  return `${JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`;
}
