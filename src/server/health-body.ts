/**
 * The /healthz and /readyz answers as pure functions: the route gathers what
 * it found (a store ping, a write probe of the state directory, each served
 * tag's state) and hands it here.
 *
 * Readiness means the server can issue IDs now (DESIGN.md "HTTP API"; the
 * exact rule is in docs/http-api.md, "Health and readiness"): it is 200 only
 * when all three hold:
 * 1. the state directory takes a write (a range or tick that cannot be
 *    recorded is never handed out);
 * 2. the store answered a ping within 1 s, or some tag has IDs buffered (a
 *    server whose store is down still serves the ranges it holds);
 * 3. not every tag the server serves is refused: a tag is refused after a
 *    rollback (until a fence), or while its buffers are empty and its last
 *    range load failed.
 * Otherwise it is STORE_UNAVAILABLE (503) with the first failing rule as a
 * plain sentence (no path), the cause kept for the log.
 */
import { UnavailableError } from '../core/errors.js';

export type PingOutcome = { readonly reachable: true } | { readonly reachable: false; readonly cause: unknown };

/** One served tag as readiness sees it (from the allocator's snapshot). */
export interface TagReadiness {
  readonly tag: string;
  /** IDs at hand now. */
  readonly remaining: number;
  /** Why the tag is refused (rollback until a fence), if it is. */
  readonly refusing: string | undefined;
  /** The last range load failed (and none succeeded since). */
  readonly lastLoadFailed: boolean;
}

export interface ReadinessInput {
  readonly storeKind: string;
  readonly ping: PingOutcome;
  /** The state directory's write probe; undefined when the server has none to check. */
  readonly stateDir?: PingOutcome | undefined;
  readonly tags?: readonly TagReadiness[] | undefined;
  /** The server is stopping (SIGTERM): not ready, whatever else holds, so traffic leaves before it goes. */
  readonly draining?: boolean | undefined;
}

export interface ReadyBody {
  readonly status: 'ready';
  readonly store: string;
  /** `reachable`, or `unreachable` while buffered IDs carry the server. */
  readonly storeState: 'reachable' | 'unreachable';
  /** Tags served, and those of them refused now. */
  readonly tags: { readonly served: number; readonly refused: number };
}

/** The process answers: nothing else is checked (a liveness probe must not restart a server over its store). */
export function liveBody(): { status: 'ok' } {
  return { status: 'ok' };
}

/** Whether a served tag can hand out an ID now (or load one on demand). */
export function tagCanIssue(t: TagReadiness, storeReachable: boolean): boolean {
  if (t.refusing !== undefined) return false;
  if (t.remaining > 0) return true;
  return storeReachable && !t.lastLoadFailed;
}

/** The /readyz body when the server can issue; throws SHUTTING_DOWN or STORE_UNAVAILABLE (503) naming the first rule that fails. */
export function readyBody(input: ReadinessInput): ReadyBody {
  const { storeKind, ping, stateDir } = input;
  const tags = input.tags ?? [];
  if (input.draining === true) {
    throw new UnavailableError('SHUTTING_DOWN', 'not ready: the server is draining before it stops; use another server');
  }
  if (stateDir !== undefined && !stateDir.reachable) {
    throw new UnavailableError(
      'STORE_UNAVAILABLE',
      'not ready: the state directory cannot be written, so no new range or tick can be recorded',
      {
        cause: stateDir.cause,
      },
    );
  }
  const buffered = tags.some((t) => t.refusing === undefined && t.remaining > 0);
  if (!ping.reachable && !buffered) {
    throw new UnavailableError('STORE_UNAVAILABLE', `not ready: store ${storeKind} is not reachable and no tag has IDs buffered`, {
      cause: ping.cause,
    });
  }
  const refused = tags.filter((t) => !tagCanIssue(t, ping.reachable)).length;
  if (tags.length > 0 && refused === tags.length) {
    throw new UnavailableError('STORE_UNAVAILABLE', `not ready: every tag this server serves is refused (${refused} of ${tags.length})`);
  }
  return {
    status: 'ready',
    store: storeKind,
    storeState: ping.reachable ? 'reachable' : 'unreachable',
    tags: { served: tags.length, refused },
  };
}
