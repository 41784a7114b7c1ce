/**
 * The range ledger against the log (DESIGN.md invariant 7: no range is
 * issued without its ledger row). Every ID the clients were given for a tag
 * is handed to `sequoia audit --json`, as an operator would after an
 * incident, and whatever the store's ledger does not cover comes back as the
 * verdict the checker reports. The harness reads no table itself: it needs
 * none of the project's code or schemas.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LedgerVerdict } from '../checker.js';
import { readLog } from '../record.js';
import type { Context } from './context.js';

/** The part of audit's JSON the verdict needs. */
interface AuditJson {
  readonly findings: ReadonlyArray<{ readonly kind: string; readonly count: number; readonly examples: readonly string[] }>;
  readonly summary: { readonly ledger?: { readonly firstId: string | null } };
  readonly notChecked: readonly string[];
}

/** Verdicts by `segment:TAG`, for CheckSpec.ledger. Throws when audit cannot answer (the scenario fails). */
export async function ledgerVerdicts(ctx: Context, store: string, tags: readonly string[]): Promise<Record<string, LedgerVerdict>> {
  const records = readLog(ctx.logDir);
  const out: Record<string, LedgerVerdict> = {};
  for (const tag of tags) {
    const ids = new Set<string>();
    for (const r of records) if (r.generator === 'segment' && r.key === tag) for (const id of r.ids ?? []) ids.add(id);
    const file = join(ctx.dir, `ledger-ids-${tag}.txt`);
    writeFileSync(file, [...ids].join('\n') + '\n');
    // --allow-empty: a tag its clients got no ID of is checked as 0 IDs (the verdict says so), not refused.
    const r = await ctx.sequoia(['audit', file, '--tag', tag, '--store', store, '--allow-empty', '--json', '--no-progress'], true);
    if (r.status !== 0 && r.status !== 1) throw new Error(`sequoia audit --tag ${tag} exited ${r.status}: ${r.stderr.slice(0, 500)}`);
    const report = JSON.parse(r.stdout) as AuditJson;
    const firstText = report.summary.ledger?.firstId;
    if (firstText === undefined)
      throw new Error(`sequoia audit --tag ${tag}: the store's ledger was not read (${report.notChecked.join('; ')})`);
    const foreign = report.findings.find((f) => f.kind === 'foreign');
    // IDs below the ledger's first range are not checked by audit (pruned rows); here nothing is old enough to be pruned.
    const first = firstText === null ? undefined : BigInt(firstText);
    const below = [...ids].filter((id) => first === undefined || BigInt(id) < first);
    out[`segment:${tag}`] = {
      checked: ids.size,
      uncovered: (foreign?.count ?? 0) + below.length,
      examples: [...below.slice(0, 20), ...(foreign?.examples.slice(0, 20) ?? [])],
    };
    ctx.notes.push(
      `ledger of ${tag}: ${ids.size} IDs checked against the store's range ledger, ${(foreign?.count ?? 0) + below.length} covered by no range`,
    );
  }
  return out;
}

/**
 * The lease ledger against the log: every snowflake ID the clients got for
 * `key` (a preset layout's name) handed to `sequoia audit --layout`, which
 * finds the IDs whose worker id nobody held at their tick (`leaseStore`: where
 * the ledger is, e.g. the etcd provider's spec). Verdict for CheckSpec.ledger.
 */
export async function leaseLedgerVerdict(ctx: Context, leaseStore: string, key: string): Promise<LedgerVerdict> {
  const ids = new Set<string>();
  for (const r of readLog(ctx.logDir)) if (r.generator === 'snowflake' && r.key === key) for (const id of r.ids ?? []) ids.add(id);
  const file = join(ctx.dir, `lease-ids-${key}.txt`);
  writeFileSync(file, [...ids].join('\n') + '\n');
  const r = await ctx.sequoia(['audit', file, '--layout', key, '--store', leaseStore, '--json', '--no-progress'], true);
  if (r.status !== 0 && r.status !== 1) throw new Error(`sequoia audit --layout ${key} exited ${r.status}: ${r.stderr.slice(0, 500)}`);
  const report = JSON.parse(r.stdout) as AuditJson;
  if (report.notChecked.some((n) => /lease ledger/.test(n)))
    throw new Error(`sequoia audit --layout ${key}: the lease ledger was not read (${report.notChecked.join('; ')})`);
  const unheld = report.findings.find((f) => f.kind === 'unheld-worker-id');
  ctx.notes.push(`lease ledger: ${ids.size} snowflake IDs checked, ${unheld?.count ?? 0} carry a worker id nobody held at their tick`);
  return { checked: ids.size, uncovered: unheld?.count ?? 0, examples: unheld?.examples.slice(0, 20) ?? [] };
}
