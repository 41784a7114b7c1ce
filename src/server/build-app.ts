/**
 * The HTTP app factory: one fastify instance, each area a plugin, one error
 * handler that maps SequoiaError codes to the design's statuses. Clients never
 * see a stack trace, a path or SQL: unexpected errors answer INTERNAL with the
 * request id that the log line also carries.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { InvalidArgumentError, SequoiaError } from '../core/errors.js';
import type { IdService } from '../service/id-service.js';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type ClientToken, makeAccess } from './auth.js';
import { ClientGate } from './client-gate.js';
import { hooksSkippedByFastPath, makeFastPath } from './fast-path.js';
import { answerRaw, answerSocket, type RawError } from './raw-answer.js';
import { ERROR_STATUS } from './error-status.js';
import { SequoiaMetrics } from './metrics.js';
import { healthRoutes } from './routes/health-routes.js';
import { statusRoutes } from './routes/status-routes.js';
import { segmentRoutes } from './routes/segment-routes.js';
import { leafDecodeRoute, snowflakeRoutes } from './routes/snowflake-routes.js';
import type { SnowflakeService } from '../service/snowflake-service.js';
import { uuidRoutes } from './routes/uuid-routes.js';
import { FormatRegistry } from './formats.js';
import { tagRoutes } from './routes/tag-routes.js';

export interface AppOptions {
  readonly service: IdService;
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
}

/** Paths of Leaf's own API: every error under them (404 and 405 included) is Leaf's `text/plain` `CODE: message`. */
const LEAF_PREFIXES = ['/api/segment/', '/api/snowflake/', '/api/decode/'];

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

interface RouteFlags {
  leaf?: boolean;
  admin?: boolean;
  hot?: boolean;
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const verboseLog = opts.logger !== undefined && (opts.logger.level === 'debug' || opts.logger.level === 'trace');
  const access = makeAccess({ adminToken: opts.adminToken, clientTokens: opts.clientTokens, metricsToken: opts.metricsToken });
  const gate = new ClientGate({
    access,
    rateLimit: opts.rateLimit,
    trustedProxies: opts.trustedProxies,
    unknownTagLookups: opts.unknownTagLookups,
  });
  const fast = opts.fastPath !== false && !verboseLog ? makeFastPath(opts.service, { access, gate }) : undefined;
  let fastOn = fast !== undefined;
  const requestTimeout = opts.requestTimeoutMs ?? 30_000;
  // Set once close() starts: later requests (on kept-alive connections) answer SHUTTING_DOWN.
  let draining = false;
  // Answers written below fastify count in sequoia_errors_total too (set once metrics exist).
  let recordRaw: (e: RawError, method?: string, url?: string) => void = () => undefined;
  const app: FastifyInstance = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger as unknown as FastifyBaseLogger } : { logger: false }),
    // Our own onResponse hook logs requests: hot ID routes only at debug.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 16 * 1024,
    // Tags may be `__proto__`: never turn JSON keys into prototype changes.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    routerOptions: { maxParamLength: 200, ignoreTrailingSlash: false },
    // Our own front answers requests during close (SHUTTING_DOWN, in the error shape).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestTimeout,
    // A path fastify cannot even decode (e.g. `%ZZ`) gets the error shape too.
    frameworkErrors: (err, req, reply) => {
      void sendError(new InvalidArgumentError(`malformed URL (${err.code === 'FST_ERR_BAD_URL' ? 'bad percent-encoding' : 'bad request'})`), req, reply, onError);
    },
    // Requests Node rejects before fastify sees them (malformed, head too large,
    // too slow) still get the error shape, never a bare status line.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return void socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const message =
        status === 431 ? 'the request head is too large' : status === 408 ? 'the request took too long' : 'malformed HTTP request';
      const e = { status, code: 'INVALID_ARGUMENT', message } as const;
      recordRaw(e);
      const answer = () => answerSocket(socket, e);
      const inFlight = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
      if (!inFlight || inFlight.writableFinished) answer();
      // A request still being answered: ours comes after its answer, not inside it ...
      else if (inFlight.req.complete) inFlight.once('finish', answer);
      // ... unless it is the broken one (its body will never come): then this is its answer.
      else if (!inFlight.headersSent) answerRaw(inFlight, e);
      else socket.destroy();
    },
    // Our own server: the fast path answers the hot routes before fastify when it can.
    serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
      const options = {
        maxHeaderSize: opts.maxHeaderBytes ?? 16 * 1024,
        requestTimeout,
        // Node checks for timed-out requests every this often (30 s by default: a 30 s
        // timeout could fire after 60 s); a quarter second keeps it within a second.
        connectionsCheckingInterval: Math.min(250, requestTimeout),
        // Answered below in the error shape instead of Node's bare 400.
        requireHostHeader: false,
      };
      // Which process answered: with --workers N the port is shared, and the
      // torture harness checks the per-process promises (IDs of a tag increase)
      // per answering process.
      const pid = String(process.pid);
      const h = (req: IncomingMessage, res: ServerResponse): void => {
        res.setHeader('sequoia-pid', pid);
        const refuse = (e: RawError): void => {
          recordRaw(e, req.method, req.url);
          answerRaw(res, e);
        };
        if (draining) return refuse({ status: 503, code: 'SHUTTING_DOWN', message: 'the server is shutting down; retry', retryAfter: 1 });
        if (req.httpVersionMinor === 1 && req.httpVersionMajor === 1 && !hasHost(req.rawHeaders)) {
          return refuse({ status: 400, code: 'INVALID_ARGUMENT', message: 'HTTP/1.1 requests need a Host header' });
        }
        if (fast === undefined || !fastOn || !fast(req, res)) handler(req, res);
      };
      const server = opts.tls
        ? createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key, ...options }, h)
        : createHttpServer(options, h);
      // fastify leaves these to the factory: idle keep-alive sockets close, slow requests get 408.
      server.keepAliveTimeout = 65_000;
      // A client that half-closes after sending (`nc -q1`, some health checkers) still reads
      // the answer: without this, Node drops every request not answered synchronously.
      (server as typeof server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
      // Node would close a CONNECT without a word: no proxying here.
      server.on('connect', (req: IncomingMessage, socket) => {
        const e = { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'CONNECT is not allowed: this is not a proxy' } as const;
        recordRaw(e, req.method);
        answerSocket(socket, e);
      });
      return server;
    },
  });

  if (fast) {
    // The fast path answers before fastify: a request hook (CORS, tracing, a
    // limit) registered on its routes would silently not run there. Such a
    // hook turns the fast path off, so every request runs it.
    app.addHook('onReady', async () => {
      const skipped = hooksSkippedByFastPath(app);
      if (skipped.length > 0) {
        fastOn = false;
        app.log.warn({ hooks: skipped }, 'HTTP fast path off: request hooks on its routes');
      }
    });
  }

  // Route table, kept to answer 405 on known paths with other methods.
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (r) => {
    const set = methodsByPath.get(r.url) ?? new Set<string>();
    for (const m of Array.isArray(r.method) ? r.method : [r.method]) set.add(m);
    methodsByPath.set(r.url, set);
  });

  const metrics =
    opts.metrics === false ? new SequoiaMetrics({ sampleIntervalMs: 0, defaultMetrics: false }) : (opts.metrics ?? new SequoiaMetrics());
  metrics.attach(opts.service);
  app.addHook('onClose', async () => metrics.close());
  const onError = (e: ErrorRecord) => metrics.recordError(e);
  recordRaw = (e, method = '', url = '') =>
    onError({ code: e.code, status: e.status, method, path: url.split('?')[0]?.slice(0, 200) ?? '', message: e.message });

  app.setErrorHandler((err: FastifyError | SequoiaError | Error, req, reply) => sendError(err, req, reply, onError));
  app.setNotFoundHandler((req, reply) => {
    void sendError(new SequoiaError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`), req, reply, onError);
  });

  // Request logging. Any hook on every request costs the hot routes
  // throughput and tail latency, so at info and above the ID routes carry none:
  // sendError logs each error answer (with its code), the admin routes log
  // themselves (tag-routes.ts); at debug or finer every request is logged.
  const logger = opts.logger;
  if (logger !== undefined && (logger.level === 'debug' || logger.level === 'trace')) {
    app.addHook('onResponse', (req, reply, done) => {
      req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
      done();
    });
  }

  app.addHook('preClose', (done) => {
    draining = true;
    done();
  });

  const checkAdmin = (req: FastifyRequest) => access.admin(req);
  if (gate.rateLimited) {
    // Keyed by an identity the caller cannot mint (client-gate.ts).
    // Named: the fast path charges the same limit itself, and its guard knows this hook by name (MIRRORED_BY_FAST_PATH).
    app.addHook('onRequest', function chargeRateLimit(req, _reply, done) {
      gate.charge(req.raw);
      done();
    });
  }
  await app.register(segmentRoutes, { service: opts.service, formats: opts.formats ?? new FormatRegistry(), access, gate });
  await app.register(uuidRoutes, { access });
  await app.register(leafDecodeRoute, { access });
  await app.register(tagRoutes, { service: opts.service, checkAdmin });
  await app.register(healthRoutes, { service: opts.service, version: opts.version ?? '0.0.0' });
  await app.register(statusRoutes, {
    service: opts.service,
    version: opts.version ?? '0.0.0',
    metrics,
    exposeMetrics: opts.metrics !== false,
    adminToken: opts.adminToken,
    access,
    snowflake: opts.snowflake,
  });

  if (opts.snowflake) {
    await app.register(snowflakeRoutes, { snowflake: opts.snowflake, access });
    metrics.registerSnowflakeSource(opts.snowflake);
  } else {
    // Generators that are not enabled answer an error, never a placeholder ID.
    app.get('/api/snowflake/get/:tag', { config: { leaf: true } }, async () => {
      throw new SequoiaError('NOT_FOUND', 'the snowflake generator is not enabled on this server');
    });
  }

  await app.after();
  for (const [url, methodSet] of [...methodsByPath]) {
    const methods = [...methodSet].filter((m) => m !== 'HEAD');
    const others = ALL_METHODS.filter((m) => !methodSet.has(m));
    if (others.length === 0) continue;
    app.route({
      method: others,
      url,
      handler: async (req) => {
        throw new SequoiaError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${url}; use ${methods.join(', ')}`);
      },
    });
  }
  return app;
}

type ErrorRecord = Parameters<SequoiaMetrics['recordError']>[0];

/** Whether the request names a Host; reads the raw list, since Node builds `req.headers` only when first asked. */
function hasHost(raw: string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i] as string;
    if (k.length === 4 && (k === 'Host' || k === 'host' || k.toLowerCase() === 'host')) return true;
  }
  return false;
}


function sendError(err: Error, req: FastifyRequest, reply: FastifyReply, onError: (e: ErrorRecord) => void): FastifyReply {
  let code: string;
  let status: number;
  let message: string;
  if (err instanceof SequoiaError) {
    code = err.code;
    status = ERROR_STATUS[err.code];
    message = err.message;
    if (err.retryAfterMs !== undefined || status === 503 || status === 429) {
      void reply.header('retry-after', String(Math.max(1, Math.ceil((err.retryAfterMs ?? 1000) / 1000))));
    }
    if (status >= 500) req.log.error({ method: req.method, url: req.url, status, code, err: err.message, cause: String(err.cause ?? '') }, 'request');
    else req.log.info({ method: req.method, url: req.url, status, code }, 'request');
  } else {
    const sc = (err as FastifyError).statusCode;
    if (sc !== undefined && sc >= 400 && sc < 500) {
      code = sc === 404 ? 'NOT_FOUND' : 'INVALID_ARGUMENT';
      status = sc === 413 || sc === 404 ? sc : 400;
      message = clientMessage(err as FastifyError);
      req.log.info({ method: req.method, url: req.url, status, code }, 'request');
    } else {
      code = 'INTERNAL';
      status = 500;
      message = `internal error (request id ${req.id})`;
      req.log.error({ method: req.method, url: req.url, status, code, err, reqId: req.id }, 'internal error');
    }
  }
  onError({ code: code as ErrorRecord['code'], status, method: req.method, path: req.url.split('?')[0]?.slice(0, 200) ?? '', message });
  const flags = (req.routeOptions?.config ?? {}) as RouteFlags;
  void reply.code(status);
  if (flags.leaf || LEAF_PREFIXES.some((p) => req.url.startsWith(p))) return reply.type('text/plain; charset=utf-8').send(`${code}: ${message}`);
  return reply.type('application/json; charset=utf-8').send(JSON.stringify({ error: { code, message } }));
}

/** fastify's own client-error messages, minus anything that could name internals. */
function clientMessage(err: FastifyError): string {
  switch (err.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'the body must not be empty when content-type is application/json';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content-type; send application/json';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'the body is too large';
    default:
      return err.message.length < 200 ? err.message.replace(/\s*at .*$/s, '') : 'malformed request';
  }
}
