/**
 * The /v1/status view of one tag, as a pure function of the metrics' tag
 * status: what the page and operators read. Values above 2^53 travel as
 * decimal strings; a caller without the admin token sees error codes, never
 * messages.
 */
import type { TagStatus } from './metrics.js';

export const round1 = (x: number): number => Math.round(x * 10) / 10;
export const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export function tagStatusJson(t: TagStatus, admin: boolean) {
  const s = t.snapshot;
  return {
    tag: s.tag,
    health: t.health,
    healthReason: t.healthReason,
    current: s.current && {
      start: String(s.current.start),
      end: String(s.current.end),
      next: s.current.next === undefined ? null : String(s.current.next),
      // [value, max): the next ID this server hands out and the segment's end.
      value: s.current.next === undefined ? null : String(s.current.next),
      max: String(s.current.end),
      size: s.currentSize,
      remaining: s.remainingCurrent,
    },
    next: s.next ? { start: String(s.next.start), end: String(s.next.end), size: s.nextSize } : null,
    remaining: s.remaining,
    nextReady: s.nextReady,
    loading: s.loading,
    step: s.step ?? null,
    storedStep: s.storedStep ?? null,
    lastLoadAt: s.lastLoadAt === undefined ? null : new Date(s.lastLoadAt).toISOString(),
    lastLoadMs: s.lastLoadMs === undefined ? null : round1(s.lastLoadMs),
    loads: s.loads,
    loadFailures: t.loadFailuresTotal,
    lastError: s.lastError ? (admin ? s.lastError : { code: s.lastError.code }) : null,
    refusing: s.refusing ?? null,
    issued: t.issuedTotal,
    ratePerSecond: round3(t.ratePerSecond),
    // null: idle (no recent traffic), the buffered IDs last indefinitely.
    coverSeconds: Number.isFinite(t.coverSeconds) ? round1(t.coverSeconds) : null,
    rateHistory: t.rateHistory.map(round3),
    businessConflicts: t.businessConflicts,
    // Who holds reserves of the tag (the SDK's, for when no server answers); addresses for the admin only.
    reserves: t.reserves.map((r) => ({
      client: r.client,
      ...(admin ? { address: r.address } : {}),
      ids: r.ids,
      first: r.first,
      last: r.last,
      at: new Date(r.at).toISOString(),
    })),
  };
}
