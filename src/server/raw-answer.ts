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

function body(e: RawError): string {
  return JSON.stringify({ error: { code: e.code, message: e.message } });
}

/** Answers on a request Node parsed, then closes the connection. */
export function answerRaw(res: ServerResponse, e: RawError): void {
  const leaf = isLeafPath(res.req.url);
  const text = leaf ? `${e.code}: ${e.message}` : body(e);
  const headers: Record<string, string | number> = {
    'content-type': leaf ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
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
  const text = body(e);
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}\r\n` +
      `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
      (e.retryAfter !== undefined ? `retry-after: ${e.retryAfter}\r\n` : '') +
      `connection: close\r\n\r\n${text}`,
  );
}
