/**
 * Who may do what. The admin token guards tag management, fence and status
 * details; optional client tokens (as in Tinyid) each grant a list of tags,
 * so one team's service can neither drain nor probe another team's tag. A
 * token check happens before any tag look-up, so a token without the grant
 * learns nothing about whether a tag exists (403 either way).
 *
 * Tokens are compared as SHA-256 digests with timingSafeEqual: constant time
 * whatever their lengths. They are never logged, and never echoed in errors.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { SequoiaError } from '../core/errors.js';

export interface ClientToken {
  readonly token: string;
  /** Tags this token may draw IDs from; `*` grants every tag. */
  readonly tags: readonly string[];
}

export interface AccessRules {
  readonly adminToken?: string | undefined;
  readonly clientTokens?: readonly ClientToken[] | undefined;
}

export interface Access {
  /** Throws UNAUTHORIZED / FORBIDDEN unless the request carries the admin token (no-op without one). */
  admin(req: FastifyRequest): void;
  /** True when the request carries the admin token (or none is configured). */
  isAdmin(req: FastifyRequest): boolean;
  /** Throws unless the request may draw IDs from `tag` (no-op without client tokens). */
  tag(req: FastifyRequest, tag: string): void;
  /** Throws unless the request carries any valid token (no-op without client tokens). */
  any(req: FastifyRequest): void;
  /** The bearer token's digest, a stable key for rate limiting; undefined without one. */
  readonly clientTokensEnabled: boolean;
}

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (h === undefined || h === '') return undefined;
  const m = BEARER.exec(h);
  return m ? (m[1] as string) : '';
}

export function makeAccess(rules: AccessRules): Access {
  const adminDigest = rules.adminToken ? digest(rules.adminToken) : undefined;
  const clients = (rules.clientTokens ?? []).map((c) => ({
    digest: digest(c.token),
    all: c.tags.includes('*'),
    tags: new Set(c.tags),
  }));
  const enabled = clients.length > 0;

  const isAdminToken = (token: string): boolean => adminDigest !== undefined && timingSafeEqual(digest(token), adminDigest);
  // Every candidate is compared, found or not, so timing does not tell which matched.
  const findClient = (token: string) => {
    const d = digest(token);
    let found: (typeof clients)[number] | undefined;
    for (const c of clients) if (timingSafeEqual(d, c.digest)) found = c;
    return found;
  };

  const need = (what: string): never => {
    throw new SequoiaError('UNAUTHORIZED', `${what}: send Authorization: Bearer <token>`);
  };

  return {
    clientTokensEnabled: enabled,
    admin(req) {
      if (!adminDigest) return;
      const t = bearer(req);
      if (t === undefined) need('this route needs the admin token');
      if (!isAdminToken(t as string)) throw new SequoiaError('FORBIDDEN', 'the token does not grant admin access');
    },
    isAdmin(req) {
      if (!adminDigest) return true;
      const t = bearer(req);
      return t !== undefined && t !== '' && isAdminToken(t);
    },
    tag(req, tag) {
      if (!enabled) return;
      const t = bearer(req);
      if (t === undefined) need('this server needs a client token');
      if (isAdminToken(t as string)) return;
      const c = findClient(t as string);
      if (!c || !(c.all || c.tags.has(tag))) throw new SequoiaError('FORBIDDEN', 'the token does not grant this tag');
    },
    any(req) {
      if (!enabled) return;
      const t = bearer(req);
      if (t === undefined) need('this server needs a client token');
      if (!isAdminToken(t as string) && !findClient(t as string)) throw new SequoiaError('FORBIDDEN', 'the token is not valid');
    },
  };
}

/** Kept for callers that only need the admin check. */
export function makeTokenCheck(token: string | undefined): (req: FastifyRequest) => void {
  const a = makeAccess({ adminToken: token });
  return (req) => a.admin(req);
}
