/**
 * The /healthz and /readyz answers as pure functions: the route pings the
 * store and hands the outcome here. Readiness is the store answering; a store
 * that does not answer is STORE_UNAVAILABLE (503), with the ping's failure as
 * the cause for the log.
 */
import { UnavailableError } from '../core/errors.js';

export type PingOutcome = { readonly reachable: true } | { readonly reachable: false; readonly cause: unknown };

/** The process answers: nothing else is checked (a liveness probe must not restart a server over its store). */
export function liveBody(): { status: 'ok' } {
  return { status: 'ok' };
}

/** Throws STORE_UNAVAILABLE when the store did not answer. */
export function readyBody(storeKind: string, ping: PingOutcome): { status: 'ready'; store: string } {
  if (!ping.reachable) throw new UnavailableError('STORE_UNAVAILABLE', `store ${storeKind} is not reachable`, { cause: ping.cause });
  return { status: 'ready', store: storeKind };
}
