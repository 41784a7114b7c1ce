/**
 * Merges the /v1/status of every worker of a `serve --workers N` cluster into
 * one: per tag, buffered IDs, issued totals and rates add up; the cover is the
 * shortest of any worker (the one that runs dry first); the health is the
 * worst. The current/next segments shown are those of that weakest worker;
 * each worker's own figures stay in `perWorker`.
 */
import type { Gathered } from './cluster-gather.js';

type Health = 'ok' | 'warn' | 'critical';

export interface TagStatus {
  tag: string;
  health: Health;
  healthReason: string;
  remaining: number;
  issued: number;
  ratePerSecond: number;
  coverSeconds: number | null;
  loads: number;
  loadFailures: number;
  rateHistory: number[];
  [k: string]: unknown;
}

export interface StatusBody {
  uptimeSeconds: number;
  store: { reachable: boolean; [k: string]: unknown };
  tags: TagStatus[];
  errors: { byCode: Record<string, number>; recent: Array<{ at: string; [k: string]: unknown }> };
  workers: unknown[];
  [k: string]: unknown;
}

const RANK: Record<Health, number> = { ok: 0, warn: 1, critical: 2 };
const cover = (t: TagStatus): number => t.coverSeconds ?? Number.POSITIVE_INFINITY;

export function mergeStatuses(all: ReadonlyArray<Gathered<StatusBody>>): StatusBody {
  const sorted = [...all].sort((a, b) => a.slot - b.slot);
  const base = sorted[0]!.value;
  const byTag = new Map<string, Array<{ slot: number; t: TagStatus }>>();
  for (const { slot, value } of sorted) {
    for (const t of value.tags) {
      const list = byTag.get(t.tag) ?? [];
      list.push({ slot, t });
      byTag.set(t.tag, list);
    }
  }
  const tags: TagStatus[] = [...byTag.values()].map((list) => {
    const weakest = list.reduce((a, b) =>
      RANK[b.t.health] > RANK[a.t.health] || (RANK[b.t.health] === RANK[a.t.health] && cover(b.t) < cover(a.t)) ? b : a,
    );
    const sum = (f: (t: TagStatus) => number) => list.reduce((n, x) => n + f(x.t), 0);
    const len = Math.max(...list.map((x) => x.t.rateHistory.length));
    const rateHistory = Array.from({ length: len }, (_, i) =>
      list.reduce((n, x) => n + (x.t.rateHistory[x.t.rateHistory.length - len + i] ?? 0), 0),
    );
    return {
      ...weakest.t,
      remaining: sum((t) => t.remaining),
      issued: sum((t) => t.issued),
      ratePerSecond: Math.round(sum((t) => t.ratePerSecond) * 1000) / 1000,
      loads: sum((t) => t.loads),
      loadFailures: sum((t) => t.loadFailures),
      rateHistory,
      // Every worker's holders, newest first.
      reserves: list
        .flatMap((x) => (Array.isArray(x.t.reserves) ? (x.t.reserves as Array<{ at: string }>) : []))
        .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)),
      perWorker: list.map(({ slot, t }) => ({
        worker: slot,
        health: t.health,
        remaining: t.remaining,
        coverSeconds: t.coverSeconds,
        ratePerSecond: t.ratePerSecond,
        current: t.current,
        next: t.next,
        step: t.step,
      })),
    };
  });
  tags.sort((a, b) => (a.tag < b.tag ? -1 : 1));
  const byCode: Record<string, number> = {};
  for (const { value } of sorted) for (const [c, n] of Object.entries(value.errors.byCode)) byCode[c] = (byCode[c] ?? 0) + n;
  const recent = sorted
    .flatMap(({ slot, value }) => value.errors.recent.map((e) => ({ ...e, worker: slot })))
    .sort((a, b) => (a.at < b.at ? 1 : -1))
    .slice(0, 20);
  const unreachable = sorted.find(({ value }) => !value.store.reachable);
  return {
    ...base,
    uptimeSeconds: Math.max(...sorted.map(({ value }) => value.uptimeSeconds)),
    store: unreachable ? unreachable.value.store : base.store,
    tags,
    errors: { byCode, recent },
    workers: sorted.flatMap(({ value }) => value.workers),
    cluster: { workers: sorted.map(({ slot }) => slot) },
  };
}
