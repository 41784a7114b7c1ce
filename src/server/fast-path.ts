/**
 * The two hot routes, answered before fastify when the answer is already in
 * memory. Measured (BENCHMARKS.md): under `--workers 2` fastify's per-request
 * work put the p99 of single-ID requests at about 1.5× a bare node:http
 * cluster's; this front answers plain `GET /api/segment/get/{tag}` and
 * `GET /v1/segment/{tag}[?count=N]` straight from the tag's buffer.
 *
 * It answers only the plain success case and never fails: anything else (a
 * query other than count, an escaped or invalid tag, an unknown tag, a buffer
 * that cannot serve the whole request at once, HEAD) returns false untouched,
 * and fastify serves the request in full, errors included. With client
 * tokens it serves only a caller whose token grants the tag, and with a rate
 * limit only one with a token left in its bucket (taken here, and not again
 * by fastify if the request goes on there); every refusal is fastify's to
 * answer. It is off at debug logging, which logs every request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Id } from '../core/id.js';
import { TAG_PATTERN } from '../core/validate.js';
import type { IdService } from '../service/id-service.js';
import type { Access } from './auth.js';
import type { ClientGate } from './client-gate.js';

const LEAF = '/api/segment/get/';
const V1 = '/v1/segment/';
const COUNT = /^count=([1-9][0-9]{0,4})$/;
const MAX_COUNT = 10_000;

export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

export function makeFastPath(service: IdService, guard?: { readonly access: Access; readonly gate: ClientGate }): FastPath {
  const checkTokens = guard?.access.clientTokensEnabled === true;
  const limited = guard?.gate.rateLimited === true;
  const gate = guard?.gate;
  /** Whether the caller may have `tag` now; charges its rate limit. */
  const admit = (req: IncomingMessage, tag: string): boolean => {
    if (guard === undefined || (!checkTokens && !limited)) return true;
    const caller = guard.access.caller(req);
    if (checkTokens && !guard.access.grants(caller, tag)) return false;
    return !limited || guard.gate.tryCharge(req, caller);
  };
  return (req, res) => {
    if (req.method !== 'GET') return false;
    const url = req.url ?? '';
    if (url.startsWith(LEAF)) {
      const tag = url.slice(LEAF.length);
      if (!TAG_PATTERN.test(tag) || !admit(req, tag)) return false;
      const v = service.takeBuffered(tag);
      if (v === undefined) {
        gate?.handOver(req);
        return false;
      }
      const body = String(v);
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length });
      res.end(body);
      return true;
    }
    if (url.startsWith(V1)) {
      const rest = url.slice(V1.length);
      const q = rest.indexOf('?');
      const tag = q < 0 ? rest : rest.slice(0, q);
      let count = 1;
      if (q >= 0) {
        const m = COUNT.exec(rest.slice(q + 1));
        if (!m) return false;
        count = Number(m[1]);
        if (count > MAX_COUNT) return false;
      }
      if (!TAG_PATTERN.test(tag) || !admit(req, tag)) return false;
      const ids = service.takeBufferedMany(tag, count);
      if (ids === undefined) {
        gate?.handOver(req);
        return false;
      }
      const body = idsJson(tag, ids);
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return true;
    }
    return false;
  };
}

/** The same text as the fastify route's: tags (core/tag.ts) need no JSON escaping. */
function idsJson(tag: string, ids: Id[]): string {
  return `{"tag":"${tag}","ids":["${ids.join('","')}"]}`;
}
