/**
 * The two hot routes, answered before fastify when the answer is already in
 * memory. Measured (BENCHMARKS.md): under `--workers 2` fastify's per-request
 * work put the p99 of single-ID requests at about 1.5× a bare node:http
 * cluster's; this front answers plain `GET /api/segment/get/{tag}` and
 * `GET /v1/segment/{tag}[?count=N]` straight from the tag's buffer.
 *
 * It answers only the plain success case and never fails: anything else (a
 * query other than count, a batch (it waits its turn in batch-lane.ts), an escaped or invalid tag, an unknown tag, a buffer
 * that cannot serve the whole request at once, HEAD) returns false untouched,
 * and fastify serves the request in full, errors included. With client
 * tokens it serves only a caller whose token grants the tag, and with a rate
 * limit only one with a token left in its bucket (taken here, and not again
 * by fastify if the request goes on there); every refusal is fastify's to
 * answer. It is off at debug logging, which logs every request.
 */
import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { countFromText, idsJson } from '../core/request-rules.js';
import { TAG_PATTERN } from '../core/validate.js';
import type { IdService } from '../service/id-service.js';
import type { Access } from './auth.js';
import type { ClientGate } from './client-gate.js';
import { BatchLane } from './batch-lane.js';

const LEAF = '/api/segment/get/';
const V1 = '/v1/segment/';

export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Request hooks (by function name) whose work the fast path does itself: build-app.ts's rate-limit hook. */
export const MIRRORED_BY_FAST_PATH = ['chargeRateLimit'] as const;

/** The fastify routes whose GET requests the fast path may answer instead. */
export const FAST_PATH_ROUTES = ['/api/segment/get/:tag', '/v1/segment/:tag'] as const;

/** The hooks fastify runs on a request (its lifecycle): the ones the fast path would skip. */
const REQUEST_HOOKS = new Set([
  'onRequest',
  'preParsing',
  'preValidation',
  'preHandler',
  'preSerialization',
  'onSend',
  'onResponse',
  'onError',
  'onTimeout',
  'onRequestAbort',
]);

type Hook = (...args: never[]) => unknown;

/** What `watchFastPathHooks` saw registered: request hooks (by instance) and the fast-path routes (their options). */
export interface FastPathHooks {
  /**
   * The request hooks fastify would run on a GET of a fast-path route: the
   * fast path runs none of them, so while it is on this must be empty. A CORS
   * or tracing plugin that hooks every request shows up here. Asked once the
   * app is ready (hooks can be added until then).
   */
  skipped(): string[];
}

/**
 * Watches, from the app's creation, every request hook added (on which
 * instance) and the options of the fast-path routes as they are registered. A
 * hook applies to a route when it was added on the route's own options, or on
 * the instance that registered the route or one of its ancestors (an
 * encapsulated plugin's instance inherits from its parent; a hook added in a
 * sibling plugin does not reach it). Counting an ancestor's hook added after
 * the route's plugin started errs on the safe side: the fast path goes off.
 */
const watchers = new WeakMap<FastifyInstance, FastPathHooks>();

/** `skipped()` of the app's watcher (buildApp watches whenever the fast path is on). */
export function hooksSkippedByFastPath(app: FastifyInstance): string[] {
  const w = watchers.get(app);
  if (w === undefined) throw new Error('hooksSkippedByFastPath: the app was built without the fast path');
  return w.skipped();
}

export function watchFastPathHooks(app: FastifyInstance): FastPathHooks {
  const hooks: { owner: object; name: string; fn: Hook }[] = [];
  const routes: { owner: object; url: string; opts: Record<string, unknown> }[] = [];
  const addHook = app.addHook;
  // Replaced on the root: every child instance inherits it, so plugins added later are seen too.
  app.addHook = function (this: FastifyInstance, name: string, fn: Hook) {
    if (REQUEST_HOOKS.has(name)) hooks.push({ owner: this, name, fn });
    return (addHook as (this: FastifyInstance, name: string, fn: Hook) => FastifyInstance).call(this, name, fn);
  } as FastifyInstance['addHook'];
  app.addHook('onRoute', function (this: FastifyInstance, opts) {
    const methods = Array.isArray(opts.method) ? opts.method : [opts.method];
    if (methods.includes('GET') && (FAST_PATH_ROUTES as readonly string[]).includes(opts.url)) {
      routes.push({ owner: this, url: opts.url, opts: opts as unknown as Record<string, unknown> });
    }
  });
  const mirrored = new Set<string>(MIRRORED_BY_FAST_PATH);
  const label = (fn: Hook) => `"${fn.name || 'anonymous'}()"`;
  const watched: FastPathHooks = {
    skipped: () => {
      const out: string[] = [];
      for (const r of routes) {
        const byHook = new Map<string, string[]>();
        const add = (name: string, fn: Hook) => {
          if (mirrored.has(fn.name)) return;
          byHook.set(name, [...(byHook.get(name) ?? []), label(fn)]);
        };
        for (const h of hooks) if (h.owner === r.owner || Object.prototype.isPrototypeOf.call(h.owner, r.owner)) add(h.name, h.fn);
        for (const name of REQUEST_HOOKS) {
          const own = r.opts[name];
          for (const fn of Array.isArray(own) ? own : own ? [own] : []) add(name, fn as Hook);
        }
        for (const [name, labels] of byHook) out.push(`${r.url} ${name} [${labels.join(', ')}]`);
      }
      return out;
    },
  };
  watchers.set(app, watched);
  return watched;
}

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
        const query = rest.slice(q + 1);
        const n = query.startsWith('count=') ? countFromText(query.slice('count='.length)) : undefined;
        // A batch takes its turn in the lane (batch-lane.ts), through the route.
        if (n === undefined || BatchLane.takesTurn(n)) return false;
        count = n;
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
