/**
 * The HTTP app factory: one fastify instance behind our own Node server
 * (http-front.ts), each area a plugin, one error handler (error-reply.ts)
 * that maps SequoiaError codes to the design's statuses. Clients never see a
 * stack trace, a path or SQL: unexpected errors answer INTERNAL with the
 * request id that the log line also carries.
 */
import { METHODS } from 'node:http';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import FindMyWay from 'find-my-way';
import type { Logger as PinoLogger } from 'pino';
import { SequoiaError } from '../core/errors.js';
import type { IdService } from '../service/id-service.js';
import { type Access, type ClientToken, makeAccess } from './auth.js';
import { ClientGate } from './client-gate.js';
import { installErrorReplies } from './error-reply.js';
import { parseJsonBody } from './json-body.js';
import { makeFastPath, watchFastPathHooks } from './fast-path.js';
import { type ConnectionRefusal, type Drain, type Front, frontOptions } from './http-front.js';
import { BatchLane } from './batch-lane.js';
import { SequoiaMetrics } from './metrics.js';
import { healthRoutes } from './routes/health-routes.js';
import { statusRoutes } from './routes/status-routes.js';
import { segmentRoutes } from './routes/segment-routes.js';
import { leafDecodeRoute, snowflakeDisabledRoute, snowflakeRoutes } from './routes/snowflake-routes.js';
import type { SnowflakeService } from '../service/snowflake-service.js';
import { uuidRoutes } from './routes/uuid-routes.js';
import { FormatRegistry } from './formats.js';
import { tagRoutes } from './routes/tag-routes.js';
import { conflictRoutes } from './routes/conflict-routes.js';
import { fallbackRoutes } from './routes/fallback-routes.js';
import { dailyRoutes } from './routes/daily-routes.js';
import type { FallbackLeases } from '../service/fallback-leases.js';

export interface AppOptions {
  readonly service: IdService;
  /** Fallback-space leases of the tags that have one; without it the fallback routes answer NOT_FOUND. */
  readonly fallback?: FallbackLeases | undefined;
  /** Snowflake IDs; without it the snowflake routes answer NOT_FOUND. */
  readonly snowflake?: SnowflakeService | undefined;
  /** Bearer token for the admin routes; none means they are open (bind to localhost). */
  readonly adminToken?: string | undefined;
  /** pino logger; omitted means silent. */
  readonly logger?: PinoLogger | undefined;
  readonly version?: string;
  /** Named business-number formats for `?format=`. */
  readonly formats?: FormatRegistry | undefined;
  /**
   * Metrics and status figures. Default: a new SequoiaMetrics attached to the
   * service (give your own to wire `onLoad` into the IdService for the load
   * histogram). `false`: no GET /metrics, no sampler, no process metrics;
   * /v1/status still answers, without rates.
   */
  readonly metrics?: SequoiaMetrics | false | undefined;
  /** Per-tag client tokens; when any is set, every ID route needs a token. */
  readonly clientTokens?: readonly ClientToken[] | undefined;
  /** Bearer token for tag-level /v1/status and /metrics (the admin token also reads them). */
  readonly metricsToken?: string | undefined;
  /** Per-client token bucket: `perSecond` refill, `burst` capacity. Off when omitted. */
  readonly rateLimit?: { readonly perSecond: number; readonly burst: number } | undefined;
  /** Proxies whose X-Forwarded-For names the client (addresses, CIDR ranges, `loopback`…). None by default. */
  readonly trustedProxies?: readonly string[] | undefined;
  /** Per-client store look-ups of tags the server does not know. Default 10/s, burst 20. */
  readonly unknownTagLookups?: { readonly perSecond: number; readonly burst: number } | undefined;
  /** PEM certificate and key: serve HTTPS. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer } | undefined;
  /** A request that takes longer is answered 408 and its socket closed. Default 30,000 ms. */
  readonly requestTimeoutMs?: number | undefined;
  /** Largest request head accepted (431 beyond). Default 16 KiB. */
  readonly maxHeaderBytes?: number | undefined;
  /** Answer the plain hot routes before fastify (see fast-path.ts). Default true. */
  readonly fastPath?: boolean | undefined;
  /** Open connections this process keeps; more are closed on arrival (see http-front.ts). Default: no limit. */
  readonly maxConnections?: number | undefined;
  /** Open connections per peer address; 0 or undefined: no limit. */
  readonly maxConnectionsPerAddress?: number | undefined;
  /** Resolves when the state directory takes a write: /readyz is 503 while it does not (none: not checked). */
  readonly stateDirProbe?: (() => Promise<void>) | undefined;
  /** Set by the owner to start draining (http-front.ts, Drain); close() sets it too. */
  readonly drain?: Drain | undefined;
  /**
   * `false`: no route of this app takes a JSON schema (Sequoia's own routes parse their input
   * themselves, body.ts), so fastify's schema compilers (ajv, fast-json-stringify) are never loaded,
   * a start-up saving; a route added with a schema is refused at `ready()`. Default true.
   */
  readonly jsonSchemas?: boolean | undefined;
}

/**
 * Every method Node parses, CONNECT aside (http-front.ts answers it below fastify). Fastify routes only
 * its own few; the rest (PROPFIND, SEARCH, …) are added so that a known path answers them 405, not 404.
 */
const ALL_METHODS = METHODS.filter((m) => m !== 'CONNECT');
/** fastify's router options, shared with the look-up of known paths (otherMethods): both must match a path alike. */
const ROUTER_OPTIONS = {
  maxParamLength: 200,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false,
  caseSensitive: true,
  useSemicolonDelimiter: false,
} as const;

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const verbose = isVerbose(opts.logger);
  const access = makeAccess({ adminToken: opts.adminToken, clientTokens: opts.clientTokens, metricsToken: opts.metricsToken });
  const gate = new ClientGate({
    access,
    rateLimit: opts.rateLimit,
    trustedProxies: opts.trustedProxies,
    unknownTagLookups: opts.unknownTagLookups,
  });
  const front: Front = {
    draining: false,
    drain: opts.drain ?? { leaving: false },
    fast: opts.fastPath !== false && !verbose ? makeFastPath(opts.service, { access, gate }) : undefined,
    onError: () => undefined,
  };
  const app: FastifyInstance = Fastify(fastifyOptions(opts, front));
  for (const m of ALL_METHODS) if (!app.supportedMethods.includes(m)) app.addHttpMethod(m);
  guardFastPath(app, front);
  const methodsByPath = trackRoutes(app);
  const metrics = attachMetrics(app, opts);
  front.onError = (e) => metrics.recordError(e);
  installErrorReplies(app, front.onError, otherMethods(app, methodsByPath));
  // Says which key of a body was refused and why (fastify's own says only "not valid JSON").
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);
  addRequestHooks(app, front, gate, verbose);
  await registerRoutes(app, opts, access, gate, metrics, front.drain);
  return app;
}

function isVerbose(logger: PinoLogger | undefined): boolean {
  return logger !== undefined && (logger.level === 'debug' || logger.level === 'trace');
}

function fastifyOptions(opts: AppOptions, front: Front): FastifyServerOptions {
  const requestTimeout = opts.requestTimeoutMs ?? 30_000;
  return {
    ...(opts.logger ? { loggerInstance: opts.logger as unknown as FastifyBaseLogger } : { logger: false }),
    // Our own onResponse hook logs requests: hot ID routes only at debug.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 16 * 1024,
    // Tags may be `__proto__`: never turn JSON keys into prototype changes.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    routerOptions: ROUTER_OPTIONS,
    // Our own front answers requests during close (SHUTTING_DOWN, in the error shape).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestTimeout,
    ...(opts.jsonSchemas === false
      ? { schemaController: { compilersFactory: { buildValidator: noSchemas, buildSerializer: noSchemas } } }
      : {}),
    ...frontOptions(
      {
        tls: opts.tls,
        requestTimeout,
        maxHeaderBytes: opts.maxHeaderBytes ?? 16 * 1024,
        maxConnections: opts.maxConnections,
        maxConnectionsPerAddress: opts.maxConnectionsPerAddress,
        onConnectionRefused: refusalLog(opts.logger),
      },
      front,
    ),
  };
}

function noSchemas(): never {
  throw new Error('this app takes no JSON schemas (built with jsonSchemas: false)');
}

/**
 * Connections refused by a limit: one warning per 10 s with the count since the last (and how many
 * of them were reset without an answer), so a flood cannot flood the log.
 */
function refusalLog(logger: PinoLogger | undefined): ((e: ConnectionRefusal) => void) | undefined {
  if (logger === undefined) return undefined;
  let since = 0;
  let reset = 0;
  let lastAt = Number.NEGATIVE_INFINITY;
  return (e) => {
    since++;
    if (!e.answered) reset++;
    const now = performance.now();
    if (now - lastAt < 10_000) return;
    lastAt = now;
    logger.warn(
      { limit: e.limit, address: e.address, open: e.open, max: e.max, refused: since, reset },
      'connections refused: limit reached',
    );
    since = 0;
    reset = 0;
  };
}

/**
 * The fast path answers before fastify: a request hook (CORS, tracing, a
 * limit) registered on its routes would silently not run there. Such a hook
 * turns the fast path off, so every request runs it.
 */
function guardFastPath(app: FastifyInstance, front: Front): void {
  if (front.fast === undefined) return;
  const watched = watchFastPathHooks(app);
  app.addHook('onReady', async () => {
    const skipped = watched.skipped();
    if (skipped.length > 0) {
      front.fast = undefined;
      app.log.warn({ hooks: skipped }, 'HTTP fast path off: request hooks on its routes');
    }
  });
}

/** Route table, kept to answer 405 on known paths with other methods. */
function trackRoutes(app: FastifyInstance): Map<string, Set<string>> {
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (r) => {
    const set = methodsByPath.get(r.url) ?? new Set<string>();
    for (const m of Array.isArray(r.method) ? r.method : [r.method]) set.add(m);
    methodsByPath.set(r.url, set);
  });
  return methodsByPath;
}

function attachMetrics(app: FastifyInstance, opts: AppOptions): SequoiaMetrics {
  const metrics =
    opts.metrics === false ? new SequoiaMetrics({ sampleIntervalMs: 0, defaultMetrics: false }) : (opts.metrics ?? new SequoiaMetrics());
  metrics.attach(opts.service);
  app.addHook('onClose', async () => metrics.close());
  return metrics;
}

function addRequestHooks(app: FastifyInstance, front: Front, gate: ClientGate, verbose: boolean): void {
  // Request logging. Any hook on every request costs the hot routes
  // throughput and tail latency, so at info and above the ID routes carry none:
  // sendError logs each error answer (with its code), the admin routes log
  // themselves (tag-routes.ts); at debug or finer every request is logged.
  if (verbose) {
    app.addHook('onResponse', (req, reply, done) => {
      req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
      done();
    });
  }
  app.addHook('preClose', (done) => {
    front.drain.leaving = true;
    front.draining = true;
    done();
  });
  if (gate.rateLimited) {
    // Keyed by an identity the caller cannot mint (client-gate.ts).
    // Named: the fast path charges the same limit itself, and its guard knows this hook by name (MIRRORED_BY_FAST_PATH).
    app.addHook('onRequest', function chargeRateLimit(req, _reply, done) {
      gate.charge(req.raw);
      done();
    });
  }
}

async function registerRoutes(
  app: FastifyInstance,
  opts: AppOptions,
  access: Access,
  gate: ClientGate,
  metrics: SequoiaMetrics,
  drain: Drain,
): Promise<void> {
  const version = opts.version ?? '0.0.0';
  // One lane per server process: batches of every generator take turns in it (batch-lane.ts).
  const lane = new BatchLane();
  await app.register(segmentRoutes, { service: opts.service, formats: opts.formats ?? new FormatRegistry(), access, gate, lane, metrics });
  await app.register(uuidRoutes, { access, lane, metrics });
  await app.register(dailyRoutes, { service: opts.service, access, gate, lane });
  await app.register(leafDecodeRoute, { access, lineage: opts.snowflake?.layout() });
  await app.register(tagRoutes, { service: opts.service, checkAdmin: (req) => access.admin(req) });
  await app.register(conflictRoutes, { access, metrics, service: opts.service, store: opts.service.store });
  if (opts.fallback) await app.register(fallbackRoutes, { fallback: opts.fallback, access, gate });
  await app.register(healthRoutes, { service: opts.service, stateDirProbe: opts.stateDirProbe, drain });
  await app.register(statusRoutes, {
    service: opts.service,
    version,
    metrics,
    exposeMetrics: opts.metrics !== false,
    adminToken: opts.adminToken,
    access,
    snowflake: opts.snowflake,
  });
  if (opts.snowflake) {
    await app.register(snowflakeRoutes, { snowflake: opts.snowflake, access, lane });
    metrics.registerSnowflakeSource(opts.snowflake);
  } else {
    await app.register(snowflakeDisabledRoute);
  }
}

/**
 * 405 on a known path with another method, naming the methods it takes. What fastify's router does not
 * route reaches the not-found handler, which looks the path up among the known paths (a router of its
 * own, built once the routes are in, with fastify's options); registering a refusing route for every
 * other method of every path instead cost a start about 15 ms of route compilation.
 */
function otherMethods(
  app: FastifyInstance,
  methodsByPath: ReadonlyMap<string, ReadonlySet<string>>,
): (req: FastifyRequest, reply: FastifyReply) => SequoiaError | undefined {
  const known = FindMyWay(ROUTER_OPTIONS);
  app.addHook('onReady', async () => {
    for (const [url, methodSet] of methodsByPath) {
      // TRACE is only ever routed to be refused (Leaf's routes, as Tomcat does).
      const methods = [...methodSet].filter((m) => m !== 'HEAD' && m !== 'TRACE');
      const allow = ALL_METHODS.filter((m) => methodSet.has(m) && m !== 'TRACE').join(', ');
      known.on('GET', url, () => undefined, { url, methodSet, methods, allow });
    }
  });
  return (req, reply) => {
    const hit = known.find('GET', req.url);
    if (hit === null) return undefined;
    const { url, methodSet, methods, allow } = hit.store as {
      url: string;
      methodSet: ReadonlySet<string>;
      methods: string[];
      allow: string;
    };
    if (methodSet.has(req.method)) return undefined;
    void reply.header('allow', allow); // RFC 9110: a 405 names the methods the resource takes
    return new SequoiaError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${url}; use ${methods.join(', ')}`);
  };
}
