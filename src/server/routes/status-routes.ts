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
import type { SnowflakeService } from '../../service/snowflake-service.js';
import type { SequoiaMetrics } from '../metrics.js';
import { statusBody } from '../status-body.js';
import { storeProbe } from '../store-probe.js';
import { UI_CSS, UI_HTML, UI_JS } from '../ui/page.js';

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

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export async function statusRoutes(app: FastifyInstance, opts: StatusRoutesOptions): Promise<void> {
  const slot = workerSlot();
  // Each worker's series carry its slot, so merged output keeps them apart.
  if (slot !== undefined) opts.metrics.registry.setDefaultLabels({ worker: String(slot) });
  registerGatherSource('metrics', () => opts.metrics.registry.getMetricsAsJSON());
  statusRoute(app, opts);
  if (opts.exposeMetrics) metricsRoute(app, opts);
  app.get('/ui', async (_req, reply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(UI_HTML));
  app.get('/ui/app.js', async (_req, reply) => reply.headers(SECURITY_HEADERS).type('text/javascript; charset=utf-8').send(UI_JS));
  app.get('/ui/app.css', async (_req, reply) => reply.headers(SECURITY_HEADERS).type('text/css; charset=utf-8').send(UI_CSS));
}

/** GET /v1/status: gathers the inputs of statusBody (from every worker under `--workers N`) and sends the body. */
function statusRoute(app: FastifyInstance, opts: StatusRoutesOptions): void {
  const { service, metrics, access } = opts;
  const probe = storeProbe(service);
  // One probe for the page and for sequoia_store_reachable: the store sees one ping per period for both.
  metrics.registerStoreProbe(probe);
  const buildStatus = async (admin: boolean, detail: boolean): Promise<StatusBody> =>
    statusBody({
      version: opts.version,
      uptimeMs: service.uptimeMs(),
      store: await probe(),
      nowMs: Date.now(),
      admin,
      detail,
      adminTokenRequired: opts.adminToken !== undefined,
      storeKind: service.store.kind,
      tags: detail ? metrics.tagStatuses() : [],
      errorsByCode: metrics.errorsByCode(),
      recentErrors: metrics.recentErrors(),
      layouts: opts.snowflake?.knownLayouts() ?? [],
      defaultLayout: opts.snowflake?.defaultLayout,
      snowflakeReports: metrics.snowflakeReports(),
    });
  registerGatherSource('status', (arg: { admin: boolean; detail?: boolean }) => buildStatus(arg.admin, arg.detail ?? arg.admin));

  app.get('/v1/status', async (req, reply) => {
    const detail = access.detail(req);
    // Error paths name tags: the admin view is detail too.
    const admin = detail && access.isAdmin(req);
    void reply.header('cache-control', 'no-store');
    const all = await gather<StatusBody>('status', { admin, detail });
    return all && all.length > 0 ? mergeStatuses(all) : buildStatus(admin, detail);
  });
}

function metricsRoute(app: FastifyInstance, { metrics, access }: StatusRoutesOptions): void {
  app.get('/metrics', async (req, reply) => {
    if (!access.detail(req)) {
      throw new SequoiaError('UNAUTHORIZED', 'metrics need the metrics or the admin token: send Authorization: Bearer <token>');
    }
    // Under `--workers N`, every worker's series (labelled worker="<slot>") in one answer.
    const all = await gather<Awaited<ReturnType<Registry['getMetricsAsJSON']>>>('metrics', undefined);
    const text =
      all && all.length > 0 ? await AggregatorRegistry.aggregate(all.map((r) => r.value)).metrics() : await metrics.metricsText();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
