/**
 * Observability routes: GET /v1/status (JSON), GET /metrics (Prometheus text)
 * and the live page GET /ui (+ its script and stylesheet). The page reads
 * /v1/status only: a snapshot, never live internals.
 *
 * Admin details (error messages, request paths) are shown only to a caller
 * with the admin token when the server has one. Once any token is configured,
 * tag-level detail (names, counts, ranges: for a permuted business number the
 * raw counter its format hides) needs the admin or the metrics token: without
 * a token /v1/status is a summary without tags and /metrics answers 401; any
 * other token is refused (403) so the page can say so.
 */
import type { FastifyInstance } from 'fastify';
import { SequoiaError } from '../../core/errors.js';
import type { Access } from '../auth.js';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { IdService } from '../../service/id-service.js';
import { gather, registerGatherSource, workerSlot } from '../cluster-gather.js';
import { mergeStatuses, type StatusBody } from '../status-merge.js';
import { PRESETS } from '../../core/snowflake/layout.js';
import type { SnowflakeService } from '../../service/snowflake-service.js';
import { COVER_CRITICAL_SECONDS, COVER_OK_SECONDS, type SequoiaMetrics } from '../metrics.js';
import { UI_CSS, UI_HTML, UI_JS } from '../ui/page.js';

const PING_TIMEOUT_MS = 1000;
/** The store is pinged at most once per this period, however many pages poll. */
const PING_CACHE_MS = 1000;

export interface StatusRoutesOptions {
  readonly service: IdService;
  readonly version: string;
  readonly metrics: SequoiaMetrics;
  /** Whether GET /metrics is served. */
  readonly exposeMetrics: boolean;
  readonly adminToken: string | undefined;
  readonly access: Access;
  /** The snowflake service, when on: its layouts (presets and configured ones) are listed. */
  readonly snowflake?: SnowflakeService | undefined;
}

interface StoreHealth {
  reachable: boolean;
  latencyMs: number | null;
  checkedAt: string;
  error: string | null;
}

/** Pings the store at most once per PING_CACHE_MS; concurrent callers share one ping. */
function storeProbe(service: IdService): () => Promise<StoreHealth> {
  let last: { at: number; value: StoreHealth } | undefined;
  let inflight: Promise<StoreHealth> | undefined;
  const ping = async (): Promise<StoreHealth> => {
    const t0 = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        service.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), PING_TIMEOUT_MS);
        }),
      ]);
      return { reachable: true, latencyMs: round1(performance.now() - t0), checkedAt: new Date().toISOString(), error: null };
    } catch (e) {
      const code = e instanceof Error && 'code' in e && typeof e.code === 'string' ? e.code : 'STORE_UNAVAILABLE';
      return { reachable: false, latencyMs: null, checkedAt: new Date().toISOString(), error: code };
    } finally {
      clearTimeout(timer);
    }
  };
  return () => {
    const now = Date.now();
    if (last && now - last.at < PING_CACHE_MS) return Promise.resolve(last.value);
    inflight ??= ping().then((value) => {
      last = { at: Date.now(), value };
      inflight = undefined;
      return value;
    });
    return inflight;
  };
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export async function statusRoutes(app: FastifyInstance, opts: StatusRoutesOptions): Promise<void> {
  const { service, metrics } = opts;
  const probe = storeProbe(service);

  const { access } = opts;

  const slot = workerSlot();
  // Each worker's series carry its slot, so merged output keeps them apart.
  if (slot !== undefined) metrics.registry.setDefaultLabels({ worker: String(slot) });

  const buildStatus = async (admin: boolean, detail: boolean): Promise<StatusBody> => {
    const store = await probe();
    return {
      version: opts.version,
      uptimeSeconds: Math.round((Date.now() - service.startedAt) / 1000),
      now: new Date().toISOString(),
      admin,
      adminTokenRequired: opts.adminToken !== undefined,
      // false: tags are left out; send the admin or the metrics token to see them.
      detail,
      thresholds: { coverOkSeconds: COVER_OK_SECONDS, coverCriticalSeconds: COVER_CRITICAL_SECONDS },
      store: { kind: service.store.kind, ...store },
      tags: (detail ? metrics.tagStatuses() : []).map((t) => {
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
        };
      }),
      errors: {
        byCode: metrics.errorsByCode(),
        recent: metrics
          .recentErrors()
          .slice(0, 20)
          .map((e) =>
            admin
              ? { at: new Date(e.at).toISOString(), code: e.code, status: e.status, method: e.method, path: e.path, message: e.message }
              : { at: new Date(e.at).toISOString(), code: e.code, status: e.status },
          ),
      },
      // Every layout /v1/snowflake?layout= takes (empty while snowflake is off).
      layouts: (opts.snowflake?.knownLayouts() ?? []).map((l) => ({
        name: l.name,
        version: l.version,
        preset: PRESETS.get(l.name) === l,
        default: l.name === opts.snowflake?.defaultLayout,
        epoch: new Date(l.epochMs).toISOString(),
        unitMs: l.unitMs,
        timeBits: l.timeBits,
        fields: l.fields.map((f) => ({ name: f.name, bits: f.bits, role: f.role })),
        endsAt: new Date(l.endsAtMs).toISOString(),
      })),
      // One row per snowflake id space this server issues in (empty while snowflake is off).
      workers: metrics.snowflakeReports().map((r) => ({
        generator: r.generator,
        workerId: r.workerId,
        lastTick: r.lastTick,
        leaseExpiresAt: r.leaseExpiresAtMs === undefined ? null : new Date(r.leaseExpiresAtMs).toISOString(),
        leaseExpiresInSeconds: r.leaseExpiresAtMs === undefined ? null : round1((r.leaseExpiresAtMs - Date.now()) / 1000),
        clockBackwardsTotal: r.clockBackwardsTotal,
        sequenceExhaustedTotal: r.sequenceExhaustedTotal,
        layoutRemainingSeconds: r.layoutRemainingSeconds ?? null,
      })),
    };
  };
  registerGatherSource('status', (arg: { admin: boolean; detail?: boolean }) => buildStatus(arg.admin, arg.detail ?? arg.admin));
  registerGatherSource('metrics', () => metrics.registry.getMetricsAsJSON());

  app.get('/v1/status', async (req, reply) => {
    const detail = access.detail(req);
    // Error paths name tags: the admin view is detail too.
    const admin = detail && access.isAdmin(req);
    void reply.header('cache-control', 'no-store');
    const all = await gather<StatusBody>('status', { admin, detail });
    return all && all.length > 0 ? mergeStatuses(all) : buildStatus(admin, detail);
  });

  if (opts.exposeMetrics) {
    app.get('/metrics', async (req, reply) => {
      if (!access.detail(req)) {
        throw new SequoiaError('UNAUTHORIZED', 'metrics need the metrics or the admin token: send Authorization: Bearer <token>');
      }
      // Under `--workers N`, every worker's series (labelled worker="<slot>") in one answer.
      const all = await gather<Awaited<ReturnType<Registry['getMetricsAsJSON']>>>('metrics', undefined);
      const text = all && all.length > 0 ? await AggregatorRegistry.aggregate(all.map((r) => r.value)).metrics() : await metrics.metricsText();
      return reply.type(metrics.registry.contentType).send(text);
    });
  }

  app.get('/ui', async (_req, reply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(UI_HTML));
  app.get('/ui/app.js', async (_req, reply) => reply.headers(SECURITY_HEADERS).type('text/javascript; charset=utf-8').send(UI_JS));
  app.get('/ui/app.css', async (_req, reply) => reply.headers(SECURITY_HEADERS).type('text/css; charset=utf-8').send(UI_CSS));
}
