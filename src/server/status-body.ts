/**
 * The /v1/status body as a pure function of what the route gathers (the store
 * probe, the metrics' figures, the snowflake layouts and reports, the time):
 * the route only collects these and sends the result. A caller without the
 * admin token sees error codes and statuses, never messages or paths.
 */
import { PRESETS, type Layout } from '../core/snowflake/layout.js';
import { COVER_CRITICAL_SECONDS, COVER_OK_SECONDS, type RecentError, type SnowflakeWorkerReport, type TagStatus } from './metrics.js';
import type { StatusBody } from './status-merge.js';
import { round1, tagStatusJson } from './status-view.js';

/** The store's answer to the last ping (store-probe.ts). */
export interface StoreHealth {
  readonly reachable: boolean;
  readonly latencyMs: number | null;
  readonly checkedAt: string;
  readonly error: string | null;
}

export interface StatusInputs {
  readonly version: string;
  /** How long the service has run (monotonic ms: a stepped wall clock does not change it), and the wall-clock ms now. */
  readonly uptimeMs: number;
  readonly nowMs: number;
  readonly admin: boolean;
  /** false: tags are left out; send the admin or the metrics token to see them. */
  readonly detail: boolean;
  readonly adminTokenRequired: boolean;
  readonly storeKind: string;
  readonly store: StoreHealth;
  /** Only read when `detail`. */
  readonly tags: readonly TagStatus[];
  readonly errorsByCode: Record<string, number>;
  /** Newest first. */
  readonly recentErrors: readonly RecentError[];
  /** Every layout /v1/snowflake?layout= takes (empty while snowflake is off). */
  readonly layouts: readonly Layout[];
  readonly defaultLayout: string | undefined;
  /** One per snowflake id space this server issues in (empty while snowflake is off). */
  readonly snowflakeReports: readonly SnowflakeWorkerReport[];
}

export function statusBody(i: StatusInputs): StatusBody {
  return {
    version: i.version,
    uptimeSeconds: Math.round(i.uptimeMs / 1000),
    now: new Date(i.nowMs).toISOString(),
    admin: i.admin,
    adminTokenRequired: i.adminTokenRequired,
    detail: i.detail,
    thresholds: { coverOkSeconds: COVER_OK_SECONDS, coverCriticalSeconds: COVER_CRITICAL_SECONDS },
    store: { kind: i.storeKind, ...i.store },
    tags: (i.detail ? i.tags : []).map((t) => tagStatusJson(t, i.admin)),
    errors: { byCode: i.errorsByCode, recent: i.recentErrors.slice(0, 20).map((e) => errorRow(e, i.admin)) },
    layouts: i.layouts.map((l) => layoutRow(l, i.defaultLayout)),
    workers: i.snowflakeReports.map((r) => workerRow(r, i.nowMs)),
  };
}

function errorRow(e: RecentError, admin: boolean) {
  const at = new Date(e.at).toISOString();
  return admin
    ? { at, code: e.code, status: e.status, method: e.method, path: e.path, message: e.message }
    : { at, code: e.code, status: e.status };
}

function layoutRow(l: Layout, defaultLayout: string | undefined) {
  return {
    name: l.name,
    version: l.version,
    preset: PRESETS.get(l.name) === l,
    default: l.name === defaultLayout,
    epoch: new Date(l.epochMs).toISOString(),
    unitMs: l.unitMs,
    timeBits: l.timeBits,
    fields: l.fields.map((f) => ({ name: f.name, bits: f.bits, role: f.role })),
    endsAt: new Date(l.endsAtMs).toISOString(),
  };
}

function workerRow(r: SnowflakeWorkerReport, nowMs: number) {
  return {
    generator: r.generator,
    workerId: r.workerId,
    lastTick: r.lastTick,
    leaseExpiresAt: r.leaseExpiresAtMs === undefined ? null : new Date(r.leaseExpiresAtMs).toISOString(),
    leaseExpiresInSeconds: r.leaseExpiresAtMs === undefined ? null : round1((r.leaseExpiresAtMs - nowMs) / 1000),
    clockBackwardsTotal: r.clockBackwardsTotal,
    sequenceExhaustedTotal: r.sequenceExhaustedTotal,
    layoutRemainingSeconds: r.layoutRemainingSeconds ?? null,
  };
}
