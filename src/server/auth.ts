/**
 * Who may do what. The admin token guards tag management, fence and status
 * details; optional client tokens (as in Tinyid) each grant a list of tags,
 * so one team's service can neither drain nor probe another team's tag. A
 * token check happens before any tag look-up, so a token without the grant
 * learns nothing about whether a tag exists (403 either way).
 *
 * Tokens are compared as SHA-256 digests with timingSafeEqual: constant time
 * whatever their lengths. They are never logged, and never echoed in errors.
 * Every token has a name (admin, metrics, or the client token's): the rate
 * limit keys on it, so a caller cannot mint a new bucket by sending junk.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { SequoiaError } from '../core/errors.js';

export interface ClientToken {
  readonly token: string;
  /** Tags this token may draw IDs from; `*` grants every tag. */
  readonly tags: readonly string[];
  /** The client's name: its rate-limit bucket and its name in logs. Default `client-<position from 1>`. */
  readonly name?: string | undefined;
}

export interface AccessRules {
  readonly adminToken?: string | undefined;
  readonly clientTokens?: readonly ClientToken[] | undefined;
  /** Bearer token that may read tag-level status and metrics, and nothing else. */
  readonly metricsToken?: string | undefined;
}

/** What a request's `Authorization` header proves. */
export type Caller =
  | { readonly kind: 'none' }
  | { readonly kind: 'invalid' }
  | { readonly kind: 'admin' | 'metrics'; readonly name: string; readonly key: string }
  | { readonly kind: 'client'; readonly name: string; readonly key: string; readonly all: boolean; readonly tags: ReadonlySet<string> };

/** Anything with request headers: a node:http IncomingMessage or a fastify request. */
export interface HasHeaders {
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders?: string[];
}

/**
 * The Authorization header (the first, as Node keeps it). From a node:http
 * request it is read off the raw list: Node builds `headers` only when first
 * asked, and the fast path need not pay for that.
 */
function authorizationOf(req: HasHeaders): string | undefined {
  const raw = req.rawHeaders;
  if (raw === undefined) return req.headers.authorization;
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i] as string;
    if (k.length === 13 && (k === 'Authorization' || k === 'authorization' || k.toLowerCase() === 'authorization')) return raw[i + 1];
  }
  return undefined;
}

export interface Access {
  /** Throws UNAUTHORIZED / FORBIDDEN unless the request carries the admin token (no-op without one). */
  admin(req: HasHeaders): void;
  /** True when the request carries the admin token (or none is configured). */
  isAdmin(req: HasHeaders): boolean;
  /** Throws unless the request may draw IDs from `tag` (no-op without client tokens). */
  tag(req: HasHeaders, tag: string): void;
  /** Whether `caller` may draw IDs from `tag` (always true without client tokens). */
  grants(caller: Caller, tag: string): boolean;
  /** Throws unless the request carries any valid token (no-op without client tokens). */
  any(req: HasHeaders): void;
  /**
   * Whether the request may see tag-level status and metrics: always when no
   * token is configured; else with the admin or the metrics token. False
   * without a token; FORBIDDEN for any other token.
   */
  detail(req: HasHeaders): boolean;
  /** Who sent the request; computed once per request. */
  caller(req: HasHeaders): Caller;
  readonly clientTokensEnabled: boolean;
  /** Whether any token (admin, client, metrics) is configured. */
  readonly anyTokenConfigured: boolean;
}

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

const NONE: Caller = { kind: 'none' };
const INVALID: Caller = { kind: 'invalid' };

/** The configured tokens, each with the caller it names. */
function namedTokens(rules: AccessRules): Array<{ digest: Buffer; caller: Caller }> {
  const named: Array<{ digest: Buffer; caller: Caller }> = [];
  if (rules.adminToken) named.push({ digest: digest(rules.adminToken), caller: { kind: 'admin', name: 'admin', key: 'token:admin' } });
  if (rules.metricsToken)
    named.push({ digest: digest(rules.metricsToken), caller: { kind: 'metrics', name: 'metrics', key: 'token:metrics' } });
  (rules.clientTokens ?? []).forEach((c, i) => {
    const name = c.name ?? `client-${i + 1}`;
    named.push({
      digest: digest(c.token),
      caller: { kind: 'client', name, key: `token:${name}`, all: c.tags.includes('*'), tags: new Set(c.tags) },
    });
  });
  return named;
}

/** Who sends a request, by its Authorization header: what the rules of makeAccess are asked about. */
function callerLookup(named: ReadonlyArray<{ digest: Buffer; caller: Caller }>): (req: HasHeaders) => Caller {
  // Headers objects live as long as their request: the digest is computed once per request.
  const seen = new WeakMap<IncomingHttpHeaders, Caller>();
  /**
   * The exact header a configured token is sent in, to its caller: the hot
   * path's check without a digest. Only valid headers are keys, so it holds
   * one entry per token; a miss falls through to the constant-time digest
   * comparison. V8 compares strings only after their (per-process seeded)
   * hashes match, so a miss takes no longer for a closer guess.
   */
  const exact = new Map<string, Caller>();

  const identify = (h: string | undefined): Caller => {
    if (h === undefined || h === '') return NONE;
    const m = BEARER.exec(h);
    if (!m || named.length === 0) return INVALID;
    const d = digest(m[1] as string);
    // Every candidate is compared, found or not, so timing does not tell which matched.
    let found: Caller = INVALID;
    for (const n of named) if (timingSafeEqual(d, n.digest) && found === INVALID) found = n.caller;
    if (found !== INVALID) exact.set(h, found);
    return found;
  };
  const caller = (req: HasHeaders): Caller => {
    const h = authorizationOf(req);
    if (h === undefined) return NONE;
    const hit = exact.get(h);
    if (hit !== undefined) return hit;
    let c = seen.get(req.headers);
    if (c === undefined) {
      c = identify(h);
      seen.set(req.headers, c);
    }
    return c;
  };
  return caller;
}

export function makeAccess(rules: AccessRules): Access {
  const named = namedTokens(rules);
  const hasAdmin = rules.adminToken !== undefined && rules.adminToken !== '';
  const enabled = (rules.clientTokens ?? []).length > 0;
  const anyToken = named.length > 0;
  const caller = callerLookup(named);

  const need = (what: string): never => {
    throw new SequoiaError('UNAUTHORIZED', `${what}: send Authorization: Bearer <token>`);
  };
  const grants = (c: Caller, tag: string): boolean => !enabled || c.kind === 'admin' || (c.kind === 'client' && (c.all || c.tags.has(tag)));

  return {
    clientTokensEnabled: enabled,
    anyTokenConfigured: anyToken,
    caller,
    grants,
    admin(req) {
      if (!hasAdmin) return;
      const c = caller(req);
      if (c.kind === 'none') need('this route needs the admin token');
      if (c.kind !== 'admin') throw new SequoiaError('FORBIDDEN', 'the token does not grant admin access');
    },
    isAdmin(req) {
      return !hasAdmin || caller(req).kind === 'admin';
    },
    tag(req, tag) {
      if (!enabled) return;
      const c = caller(req);
      if (c.kind === 'none') need('this server needs a client token');
      if (!grants(c, tag)) throw new SequoiaError('FORBIDDEN', 'the token does not grant this tag');
    },
    any(req) {
      if (!enabled) return;
      const c = caller(req);
      if (c.kind === 'none') need('this server needs a client token');
      if (c.kind !== 'admin' && c.kind !== 'client') throw new SequoiaError('FORBIDDEN', 'the token is not valid');
    },
    detail(req) {
      if (!anyToken) return true;
      const c = caller(req);
      if (c.kind === 'admin' || c.kind === 'metrics') return true;
      if (c.kind === 'none') return false;
      throw new SequoiaError('FORBIDDEN', 'the token does not grant status details; send the admin or the metrics token');
    },
  };
}
