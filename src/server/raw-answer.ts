/**
 * Error answers written below fastify, in the contract's shape
 * (`{"error":{"code","message"}}`, Retry-After on 429 and 503): for requests
 * Node rejects before any handler (malformed, head too large, too slow), for
 * CONNECT, for HTTP/1.1 without Host, for requests arriving while the
 * server drains, and for connections over the connection caps. Under Leaf's paths, in Leaf's `text/plain` `CODE: message`,
 * as fastify's own error answers there.
 */
import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../core/errors.js';
import { isLeafPath } from './leaf-paths.js';

export interface RawError {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
  /** Seconds; sent as Retry-After. */
  readonly retryAfter?: number;
}

/**
 * The error envelope, the one home of its shape for every answer (fastify's in
 * error-reply.ts, the ones written below it here): the contract's JSON
 * `{"error":{"code","message"}}`, or under Leaf's paths Leaf's `text/plain`
 * `CODE: message`.
 */
export function errorEnvelope(code: string, message: string, leaf: boolean): { readonly type: string; readonly text: string } {
  return leaf
    ? { type: 'text/plain; charset=utf-8', text: `${code}: ${message}` }
    : { type: 'application/json; charset=utf-8', text: JSON.stringify({ error: { code, message } }) };
}

/** Retry-After in whole seconds (at least 1): when the error says when, or on every 429 and 503 (a second when it does not say). */
export function retryAfterSeconds(status: number, retryAfterMs: number | undefined): number | undefined {
  if (retryAfterMs === undefined && status !== 503 && status !== 429) return undefined;
  return Math.max(1, Math.ceil((retryAfterMs ?? 1000) / 1000));
}

/** Answers on a request Node parsed, then closes the connection. */
export function answerRaw(res: ServerResponse, e: RawError): void {
  const { type, text } = errorEnvelope(e.code, e.message, isLeafPath(res.req.url));
  const headers: Record<string, string | number> = {
    'content-type': type,
    'content-length': Buffer.byteLength(text),
    connection: 'close',
  };
  if (e.retryAfter !== undefined) headers['retry-after'] = e.retryAfter;
  res.shouldKeepAlive = false;
  res.writeHead(e.status, headers);
  res.end(text);
}

/** Answers on a bare socket (no parsed request to answer through), then closes it. */
export function answerSocket(socket: Duplex, e: RawError): void {
  if (!socket.writable) return void socket.destroy();
  const { type, text } = errorEnvelope(e.code, e.message, false);
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}\r\n` +
      `content-type: ${type}\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
      (e.retryAfter !== undefined ? `retry-after: ${e.retryAfter}\r\n` : '') +
      `connection: close\r\n\r\n${text}`,
  );
}
