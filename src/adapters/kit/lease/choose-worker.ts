import type { AcquireRequest, LeaseChoice, LeaseRow } from '../../../ports/worker-lease-store.js';

/**
 * expires_at of a worker-node claim: later than any clock reading, so the id
 * is held for good, and exact both as a JS number and in a 64-bit column.
 */
export const CLAIMED_FOR_GOOD_MS = Number.MAX_SAFE_INTEGER;

/** The lease-row owner of a worker-node claim. */
export const nodeOwner = (host: string): string => `worker-node:${host}`;

function heldFor(r: LeaseRow, nowMs: number): string {
  return r.expiresAtMs >= CLAIMED_FOR_GOOD_MS ? 'for good (a worker-node id)' : `for ${Math.ceil((r.expiresAtMs - nowMs) / 1000)} s more`;
}

/**
 * Picks an id from the rows of one space (pure, shared by every store):
 * `want` if its row is free or expired; else the lowest expired id (ids stay
 * compact and the new holder starts after the old one's last tick); else the
 * lowest id never used.
 */
export function chooseWorker(rows: readonly LeaseRow[], nowMs: number, req: AcquireRequest): LeaseChoice {
  const byId = new Map(rows.map((r) => [r.workerId, r]));
  const excluded = new Set(req.exclude ?? []);
  if (req.want !== undefined) {
    const r = byId.get(req.want);
    if (r && r.expiresAtMs > nowMs && r.owner !== req.owner) {
      return { refused: `worker id ${req.want} is held by ${r.owner} ${heldFor(r, nowMs)}` };
    }
    return { workerId: req.want };
  }
  let expired: number | undefined;
  for (const r of rows) {
    if (r.workerId < 0 || r.workerId >= req.workerCount || excluded.has(r.workerId)) continue;
    if (r.expiresAtMs <= nowMs && (expired === undefined || r.workerId < expired)) expired = r.workerId;
  }
  if (expired !== undefined) return { workerId: expired };
  for (let id = 0; id < req.workerCount; id++) if (!byId.has(id) && !excluded.has(id)) return { workerId: id };
  return { refused: `all ${req.workerCount} worker ids of this id space are held` };
}
