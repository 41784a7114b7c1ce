/**
 * Every error answer fastify sends: SequoiaError codes map to the design's
 * statuses; fastify's own client errors keep their 4xx with a message that
 * names nothing internal; anything else is INTERNAL with the request id the
 * log line also carries. Leaf's routes answer Leaf's `text/plain` `CODE: message`.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SequoiaError } from '../core/errors.js';
import { ERROR_STATUS } from './error-status.js';
import type { SequoiaMetrics } from './metrics.js';
import { isLeafPath } from './leaf-paths.js';
import { answerText } from './public-message.js';
import { errorEnvelope, retryAfterSeconds } from './raw-answer.js';

export type ErrorRecord = Parameters<SequoiaMetrics['recordError']>[0];

interface RouteFlags {
  leaf?: boolean;
  admin?: boolean;
  hot?: boolean;
}

interface ErrorAnswer {
  readonly code: string;
  readonly status: number;
  readonly message: string;
}

/**
 * The error handler and the not-found handler, both counting each answer in `onError`. `unrouted`
 * answers what no route took when the path is known under other methods (405, build-app.ts).
 */
export function installErrorReplies(
  app: FastifyInstance,
  onError: (e: ErrorRecord) => void,
  unrouted: (req: FastifyRequest, reply: FastifyReply) => SequoiaError | undefined = () => undefined,
): void {
  app.setErrorHandler((err: FastifyError | SequoiaError | Error, req, reply) => sendError(err, req, reply, onError));
  app.setNotFoundHandler((req, reply) => {
    const e = unrouted(req, reply) ?? new SequoiaError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`);
    void sendError(e, req, reply, onError);
  });
}

export function sendError(err: Error, req: FastifyRequest, reply: FastifyReply, onError: (e: ErrorRecord) => void): FastifyReply {
  const { code, status, message } = err instanceof SequoiaError ? sequoiaAnswer(err, req, reply) : otherAnswer(err, req);
  onError({ code: code as ErrorRecord['code'], status, method: req.method, path: req.url.split('?')[0]?.slice(0, 200) ?? '', message });
  const flags = (req.routeOptions?.config ?? {}) as RouteFlags;
  const { type, text } = errorEnvelope(code, message, flags.leaf === true || isLeafPath(req.url));
  return reply.code(status).type(type).send(text);
}

function sequoiaAnswer(err: SequoiaError, req: FastifyRequest, reply: FastifyReply): ErrorAnswer {
  const code = err.code;
  const status = ERROR_STATUS[err.code];
  const retryAfter = retryAfterSeconds(status, err.retryAfterMs);
  if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
  // The log keeps the whole message and its detail (paths, hosts); the client gets the public message only.
  const message = answerText(err, err.message);
  const detail = err.operatorDetail === undefined ? {} : { detail: err.operatorDetail };
  if (status >= 500)
    req.log.error(
      { method: req.method, url: req.url, status, code, err: err.message, ...detail, cause: String(err.cause ?? '') },
      'request',
    );
  else
    req.log.info(
      { method: req.method, url: req.url, status, code, ...(message === err.message ? {} : { err: err.message }), ...detail },
      'request',
    );
  return { code, status, message };
}

function otherAnswer(err: Error, req: FastifyRequest): ErrorAnswer {
  const sc = (err as FastifyError).statusCode;
  if (sc !== undefined && sc >= 400 && sc < 500) {
    const code = sc === 404 ? 'NOT_FOUND' : 'INVALID_ARGUMENT';
    const status = sc === 413 || sc === 404 ? sc : 400;
    req.log.info({ method: req.method, url: req.url, status, code }, 'request');
    return { code, status, message: clientMessage(err as FastifyError) };
  }
  req.log.error({ method: req.method, url: req.url, status: 500, code: 'INTERNAL', err, reqId: req.id }, 'internal error');
  return { code: 'INTERNAL', status: ERROR_STATUS.INTERNAL, message: `internal error (request id ${req.id})` };
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
