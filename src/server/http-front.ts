/**
 * The Node server in front of fastify: it answers what fastify never sees
 * (requests during close, HTTP/1.1 without Host, CONNECT, requests Node itself
 * rejects, connections over the connection caps) in the error shape, never a bare status line, and lets the fast
 * path answer the hot routes before fastify when it can.
 */
import type { FastifyServerOptions } from 'fastify';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as NetServer, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { InvalidArgumentError } from '../core/errors.js';
import { DRAINING_HEADER } from '../core/request-rules.js';
import { type ErrorRecord, sendError } from './error-reply.js';
import { ERROR_STATUS } from './error-status.js';
import type { FastPath } from './fast-path.js';
import { answerRaw, answerSocket, type RawError } from './raw-answer.js';

/**
 * The first step of a stop (app/start-server.ts): from then on /readyz is 503
 * and every answer carries `sequoia-draining: 1` and closes its connection, so
 * load balancers take the server out and the SDK moves to another server (a
 * client of `--workers N` reconnects, reaching another worker) while this one
 * still answers; only then does it stop accepting.
 */
export interface Drain {
  leaving: boolean;
}

/** What the front shares with the app; the app's hooks update it. */
export interface Front {
  /** Set once close() starts: later requests (on kept-alive connections) answer SHUTTING_DOWN. */
  draining: boolean;
  /** Set first on SIGTERM (see Drain). */
  readonly drain: Drain;
  /** The fast path while it is on. */
  fast: FastPath | undefined;
  /** Answers written below fastify count in sequoia_errors_total too (set once metrics exist). */
  onError: (e: ErrorRecord) => void;
}

export interface FrontOptions {
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer } | undefined;
  readonly requestTimeout: number;
  readonly maxHeaderBytes: number;
  /**
   * Open connections this process keeps; a new one beyond is answered 429 and closed at once (see
   * REFUSAL_ANSWERS). Default: no limit.
   */
  readonly maxConnections?: number | undefined;
  /** Open connections per peer address; 0 or undefined: no limit. */
  readonly maxConnectionsPerAddress?: number | undefined;
  /** Told of each connection closed by a limit (the caller logs, rate-limited). */
  readonly onConnectionRefused?: ((e: ConnectionRefusal) => void) | undefined;
}

export interface ConnectionRefusal {
  readonly limit: 'server' | 'address';
  readonly address: string;
  /** Connections open (of the server, or of that address) when it was refused. */
  readonly open: number;
  readonly max: number;
  /** Answered 429 before closing; false: reset without an answer (TLS, or every answer slot taken). */
  readonly answered: boolean;
}

/**
 * Connections beyond a bound that may be answering at the same time: each
 * holds a descriptor until its client has read the answer and closed (at
 * most REFUSAL_LINGER_MS). Beyond them a refused connection is reset without
 * a word, so a flood cannot take the descriptors the answers need; the
 * server's cap is kept this many descriptors further below the open-file
 * limit (app/fd-limit.ts).
 */
export const REFUSAL_ANSWERS = 32;
/** How long an answered refusal may stay open for its client to read the answer and close. */
const REFUSAL_LINGER_MS = 5000;

/** fastify's options that hand requests to the front. */
export function frontOptions(
  o: FrontOptions,
  front: Front,
): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler' | 'serverFactory'> {
  return {
    // A path fastify cannot even decode (e.g. `%ZZ`) gets the error shape too.
    frameworkErrors: (err, req, reply) => {
      void sendError(
        new InvalidArgumentError(`malformed URL (${err.code === 'FST_ERR_BAD_URL' ? 'bad percent-encoding' : 'bad request'})`),
        req,
        reply,
        (e) => front.onError(e),
      );
    },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket, front),
    // Our own server: the fast path answers the hot routes before fastify when it can.
    serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => createFrontServer(o, front, handler),
  };
}

function recordRaw(front: Front, e: RawError, method = '', url = ''): void {
  front.onError({ code: e.code, status: e.status, method, path: url.split('?')[0]?.slice(0, 200) ?? '', message: e.message });
}

/** Requests Node rejects before fastify sees them (malformed, head too large, too slow). */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, front: Front): void {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return void socket.destroy();
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431 ? 'the request head is too large' : status === 408 ? 'the request took too long' : 'malformed HTTP request';
  const e = { status, code: 'INVALID_ARGUMENT', message } as const; // 431 and 408 refine the code's 400 for what Node itself refuses
  recordRaw(front, e);
  const answer = () => answerSocket(socket, e);
  const inFlight = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!inFlight || inFlight.writableFinished) answer();
  // A request still being answered: ours comes after its answer, not inside it ...
  else if (inFlight.req.complete) inFlight.once('finish', answer);
  // ... unless it is the broken one (its body will never come): then this is its answer.
  else if (!inFlight.headersSent) answerRaw(inFlight, e);
  else socket.destroy();
}

function createFrontServer(o: FrontOptions, front: Front, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const options = {
    maxHeaderSize: o.maxHeaderBytes,
    requestTimeout: o.requestTimeout,
    // Node checks for timed-out requests every this often (30 s by default: a 30 s
    // timeout could fire after 60 s); a quarter second keeps it within a second.
    connectionsCheckingInterval: Math.min(250, o.requestTimeout),
    // Answered below in the error shape instead of Node's bare 400.
    requireHostHeader: false,
  };
  const h = frontHandler(front, handler);
  const server = o.tls ? createHttpsServer({ cert: o.tls.cert, key: o.tls.key, ...options }, h) : createHttpServer(options, h);
  limitConnections(server, o, front);
  // fastify leaves these to the factory: idle keep-alive sockets close, slow requests get 408.
  server.keepAliveTimeout = 65_000;
  // A client that half-closes after sending (`nc -q1`, some health checkers) still reads
  // the answer: without this, Node drops every request not answered synchronously.
  (server as typeof server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  // Node would close a CONNECT without a word: no proxying here.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const e = {
      status: ERROR_STATUS.METHOD_NOT_ALLOWED,
      code: 'METHOD_NOT_ALLOWED',
      message: 'CONNECT is not allowed: this is not a proxy',
    } as const;
    recordRaw(front, e, req.method);
    answerSocket(socket, e);
  });
  return server;
}

/**
 * Bounds the connections this process holds, per server and per peer
 * address: a connection beyond a bound never reaches the HTTP parser; it is
 * answered 429 RATE_LIMITED (Retry-After: 1) in the error shape and closed
 * the moment it arrives, so a flood of idle or slow connections is refused
 * instead of using up the process's file descriptors, and an HTTP client
 * learns why instead of seeing a reset. Past REFUSAL_ANSWERS answers in
 * flight, and on TLS (an answer would cost a handshake), it is reset. (A worker of
 * `--workers N` that runs out of descriptors cannot even receive the
 * connections the primary hands it; Node's round-robin then never hands that
 * worker another one: see cluster.ts.) Not `server.maxConnections`: in a
 * cluster worker that sends the connection back to the primary, which hands
 * it straight back, in a loop, while the worker is full.
 */
function limitConnections(server: NetServer, o: FrontOptions, front: Front): void {
  const max = o.maxConnections ?? Number.POSITIVE_INFINITY;
  const perAddress = o.maxConnectionsPerAddress || Number.POSITIVE_INFINITY;
  if (max === Number.POSITIVE_INFINITY && perAddress === Number.POSITIVE_INFINITY) return;
  let open = 0;
  let answering = 0;
  const byAddress = new Map<string, number>();
  // The HTTP (or TLS) server's own listeners run only for admitted connections: a refused one
  // must never reach the parser, and answering it means writing to it after this listener returns.
  const admitted = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const mine = byAddress.get(address) ?? 0;
    if (open >= max || mine >= perAddress) {
      const answered = o.tls === undefined && answering < REFUSAL_ANSWERS;
      const refusal: ConnectionRefusal =
        open >= max
          ? { limit: 'server', address, open, max, answered }
          : { limit: 'address', address, open: mine, max: perAddress, answered };
      if (answered) {
        answering++;
        socket.once('close', () => answering--);
        const e = refusal.limit === 'server' ? SERVER_FULL : ADDRESS_FULL;
        recordRaw(front, e);
        answerRefusal(socket, e);
      } else socket.destroy();
      o.onConnectionRefused?.(refusal);
      return;
    }
    open++;
    byAddress.set(address, mine + 1);
    socket.once('close', () => {
      open--;
      const n = (byAddress.get(address) ?? 1) - 1;
      if (n <= 0) byAddress.delete(address);
      else byAddress.set(address, n);
    });
    for (const listener of admitted) listener.call(server, socket);
  });
}

// No code of the contract's table says "this server is full" (nginx's limit_conn answers 503).
// RATE_LIMITED is the true one (a limit was reached; retry later), as for the server-wide cap on
// look-ups of unknown tags; STORE_UNAVAILABLE would send the operator to the store, SHUTTING_DOWN
// would tell the client the server is stopping.
const SERVER_FULL: RawError = {
  status: ERROR_STATUS.RATE_LIMITED,
  code: 'RATE_LIMITED',
  message: 'too many open connections to this server; retry in 1 s',
  retryAfter: 1,
};
const ADDRESS_FULL: RawError = {
  status: ERROR_STATUS.RATE_LIMITED,
  code: 'RATE_LIMITED',
  message: 'too many open connections to this server from your address; close some or retry in 1 s',
  retryAfter: 1,
};

/**
 * Answers a refused connection at once, without reading its request (its
 * bytes are read and dropped, so closing sends FIN, not RST, and the client
 * reads the whole answer), then lets it go once the client closes, or after
 * REFUSAL_LINGER_MS.
 */
function answerRefusal(socket: Socket, e: RawError): void {
  const linger = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
  socket.on('error', () => socket.destroy());
  // The client read the answer and closed: let go once the answer is out (not before: destroy drops unsent bytes).
  socket.on('end', () => (socket.writableFinished ? socket.destroy() : socket.once('finish', () => socket.destroy())));
  socket.resume();
  answerSocket(socket, e);
}

function frontHandler(front: Front, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  // Which process answered: with --workers N the port is shared, and the
  // torture harness checks the per-process promises (IDs of a tag increase)
  // per answering process. Opt-in (SEQUOIA_ANSWER_PID=1, as the harness runs
  // its servers): clients see no process id by default.
  const pid = process.env.SEQUOIA_ANSWER_PID === '1' ? String(process.pid) : undefined;
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (pid !== undefined) res.setHeader('sequoia-pid', pid);
    if (front.drain.leaving) {
      res.setHeader(DRAINING_HEADER, '1');
      res.setHeader('connection', 'close');
    }
    if (front.draining) return refuse(front, req, res, SHUTTING_DOWN);
    if (req.httpVersionMinor === 1 && req.httpVersionMajor === 1 && !hasHost(req.rawHeaders)) return refuse(front, req, res, NO_HOST);
    if (front.fast === undefined || !front.fast(req, res)) handler(req, res);
  };
}

const SHUTTING_DOWN: RawError = {
  status: ERROR_STATUS.SHUTTING_DOWN,
  code: 'SHUTTING_DOWN',
  message: 'the server is shutting down; retry',
  retryAfter: 1,
};
const NO_HOST: RawError = {
  status: ERROR_STATUS.INVALID_ARGUMENT,
  code: 'INVALID_ARGUMENT',
  message: 'HTTP/1.1 requests need a Host header',
};

/** An answer written below fastify, counted like fastify's own errors. */
function refuse(front: Front, req: IncomingMessage, res: ServerResponse, e: RawError): void {
  recordRaw(front, e, req.method, req.url);
  answerRaw(res, e);
}

/** Whether the request names a Host; reads the raw list, since Node builds `req.headers` only when first asked. */
function hasHost(raw: string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i] as string;
    if (k.length === 4 && (k === 'Host' || k === 'host' || k.toLowerCase() === 'host')) return true;
  }
  return false;
}
