/**
 * Who a client is, for limits: an identity the caller cannot mint. A request
 * whose bearer token matches a configured token (client, admin, metrics) is
 * that token's named client; any other request (no token, a junk token) is
 * its peer address, so sending a new `Authorization` header on every request
 * buys no new bucket. Behind a reverse proxy every request has the proxy's
 * address: `trustedProxies` (opt-in) names the proxies whose
 * `X-Forwarded-For` is believed, and the client is then the address the
 * nearest untrusted hop reports.
 *
 * Two limits key on it: the request rate (optional), and look-ups of tags
 * this server does not know, which reach the store (always on). Both refuse
 * with 429 RATE_LIMITED and Retry-After.
 */
import type { IncomingMessage } from 'node:http';
import proxyaddr from '@fastify/proxy-addr';
import type { Access, Caller } from './auth.js';
import { TokenBucketLimiter } from './rate-limit.js';

export interface ClientGateOptions {
  readonly access: Access;
  /** Per-client request rate; off when omitted. */
  readonly rateLimit?: { readonly perSecond: number; readonly burst: number } | undefined;
  /** Addresses or CIDR ranges (or `loopback`, `uniquelocal`…) of proxies whose X-Forwarded-For is trusted. */
  readonly trustedProxies?: readonly string[] | undefined;
  /** Per-client look-ups of tags this server does not know. Default 10/s, burst 20. */
  readonly unknownTagLookups?: { readonly perSecond: number; readonly burst: number } | undefined;
}

export const DEFAULT_UNKNOWN_TAG_LOOKUPS = { perSecond: 10, burst: 20 } as const;

export class ClientGate {
  private readonly access: Access;
  private readonly limiter: TokenBucketLimiter | undefined;
  private readonly lookups: TokenBucketLimiter;
  private readonly trust: ((addr: string, i: number) => boolean) | undefined;
  /** Requests the fast path already charged before handing them to fastify. */
  private readonly charged = new WeakSet<IncomingMessage>();

  constructor(opts: ClientGateOptions) {
    this.access = opts.access;
    this.limiter = opts.rateLimit ? new TokenBucketLimiter(opts.rateLimit.perSecond, opts.rateLimit.burst) : undefined;
    const l = opts.unknownTagLookups ?? DEFAULT_UNKNOWN_TAG_LOOKUPS;
    this.lookups = new TokenBucketLimiter(l.perSecond, l.burst);
    this.trust = opts.trustedProxies?.length ? proxyaddr.compile([...opts.trustedProxies]) : undefined;
  }

  get rateLimited(): boolean {
    return this.limiter !== undefined;
  }

  /** The client's identity: `token:<name>` for a configured token, else `addr:<address>`. */
  key(req: IncomingMessage, caller: Caller = this.access.caller(req)): string {
    if (caller.kind === 'admin' || caller.kind === 'metrics' || caller.kind === 'client') return caller.key;
    return `addr:${this.address(req)}`;
  }

  /** The peer address, or with trusted proxies the client address they forward. */
  address(req: IncomingMessage): string {
    if (this.trust === undefined) return req.socket.remoteAddress ?? 'unknown';
    return proxyaddr(req, this.trust);
  }

  /** Takes one request's token, once per request; throws RATE_LIMITED. */
  charge(req: IncomingMessage): void {
    if (this.limiter === undefined || this.charged.has(req)) return;
    this.limiter.take(this.key(req));
  }

  /**
   * The fast path's charge: true when a token was taken (or no limit is set).
   * Call `handOver` if the request then goes to fastify anyway, so it is not
   * charged twice.
   */
  tryCharge(req: IncomingMessage, caller: Caller): boolean {
    return this.limiter === undefined || this.limiter.tryTake(this.key(req, caller));
  }

  handOver(req: IncomingMessage): void {
    if (this.limiter !== undefined) this.charged.add(req);
  }

  /** A look-up of a tag the server does not know: throws RATE_LIMITED past the client's share. */
  lookUp(req: IncomingMessage): void {
    this.lookups.take(this.key(req), 'too many look-ups of unknown tags');
  }
}
