/**
 * HTTP for the client: several server URLs with failover, retries with
 * exponential backoff and full jitter on 503/429 and connection errors
 * (honouring Retry-After), a per-request timeout, and typed errors rebuilt
 * from the server's code with errorFromCode.
 *
 * Node 20's global fetch (undici) is used on purpose rather than the `undici`
 * package: it keeps connections alive by default (one pool per origin, idle
 * sockets do not hold the process open), needs no dependency, and keeps
 * `sequoia-id/client` importable with nothing but Node itself. Its default pool
 * has no connection limit, which is what a client issuing a few concurrent
 * batch loads needs; an Agent of our own would only add tuning knobs.
 *
 * Retrying an ID request is always safe: a request whose answer was lost
 * (timeout, dropped connection) may have consumed IDs on the server, which
 * only leaves a gap, never a repeat.
 */
import { InvalidArgumentError, type SequoiaError, UnavailableError, errorFromCode } from '../core/errors.js';
import { DRAINING_HEADER } from '../core/request-rules.js';
import { type Clock, monotonicMs, systemClock } from '../core/clock.js';
import { systemTimers, type Timers } from '../core/timers.js';

export interface RetryOptions {
  /** Attempts per call, across all URLs (default 6). */
  readonly attempts?: number;
  /** First backoff in ms (default 50); doubles per attempt, with full jitter. */
  readonly baseDelayMs?: number;
  /** Cap of one backoff and of a honoured Retry-After, in ms (default 2000). */
  readonly maxDelayMs?: number;
}

export interface TransportOptions {
  readonly urls: readonly string[];
  readonly token?: string | undefined;
  readonly timeoutMs: number;
  readonly retry: Required<RetryOptions>;
  readonly fetch: typeof fetch;
  /** Aborted by close(): in-flight requests and backoff sleeps end at once. */
  readonly signal: AbortSignal;
  /** A number in [0, 1) for the backoff's jitter. */
  readonly random: () => number;
  /** Default systemClock: cool-downs on its monotonic reading, Retry-After dates against its wall clock. */
  readonly clock?: Clock;
  /** Default systemTimers: backoff sleeps and the per-request timeout. */
  readonly timers?: Timers;
}

/** The error every pending and later call gets once the client is closed. */
export function closedError(): SequoiaError {
  return new UnavailableError('STORE_UNAVAILABLE', 'the Sequoia client is closed');
}

/**
 * How long a draining server is passed over when others are listed: about
 * what a restart takes. Too short costs one more draining answer or refused
 * connection (each retried elsewhere), never a failure.
 */
const DRAINING_COOL_MS = 5000;

export class Transport {
  private readonly urls: string[];
  private readonly headers: Record<string, string>;
  /** Index of the URL that answered last: calls stick to it until it fails. */
  private preferred = 0;
  /** Per URL: no request before this time (a 503's Retry-After, a refused connection). */
  private readonly coolUntil: number[];
  private readonly clock: Clock;
  private readonly timers: Timers;
  /** Backoff sleeps under way, each woken at once by close(). */
  private sleepers: Set<() => void> | undefined;

  constructor(private readonly opts: TransportOptions) {
    this.clock = opts.clock ?? systemClock;
    this.timers = opts.timers ?? systemTimers;
    if (opts.urls.length === 0) throw new InvalidArgumentError('at least one server URL is required');
    this.urls = opts.urls.map((u) => {
      let parsed: URL;
      try {
        parsed = new URL(u);
      } catch {
        throw new InvalidArgumentError(`not a URL: ${JSON.stringify(u)}`);
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
        throw new InvalidArgumentError(`server URL must be http(s): ${JSON.stringify(u)}`);
      }
      return parsed.href.replace(/\/+$/, '');
    });
    this.coolUntil = this.urls.map(() => 0);
    this.headers = { accept: 'application/json, text/plain' };
    if (opts.token !== undefined) this.headers.authorization = `Bearer ${opts.token}`;
  }

  /**
   * GETs `path` (with its query) from the first server that answers 200 and
   * returns the body text. Throws the server's typed error for a 4xx, the
   * last error after all attempts, or the closed error once closed.
   */
  async get(path: string): Promise<string> {
    return this.send(path, undefined);
  }

  /**
   * POSTs a JSON body, with the same failover and retries as `get` (a retried
   * report may be counted twice: at least once, never lost to one server).
   */
  async post(path: string, body: unknown): Promise<string> {
    return this.send(path, JSON.stringify(body));
  }

  private async send(path: string, body: string | undefined): Promise<string> {
    const { attempts, baseDelayMs, maxDelayMs } = this.opts.retry;
    let last: SequoiaError | undefined;
    // A draining server's refusal, or a listed server's port refusing connections (it is being
    // restarted), is a planned stop, not a failure: retried at once on another server without using
    // an attempt, at most once per listed URL per call (all of them stopped: attempts count).
    let stoppedLeft = this.urls.length;
    let skipBackoff = false;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (this.opts.signal.aborted) throw closedError();
      const i = this.pick();
      const wait = this.coolUntil[i]! - monotonicMs(this.clock);
      // Backoff: full jitter over an exponentially growing window; a server's
      // Retry-After (recorded in coolUntil) is a floor when every URL cools.
      const backoff = attempt === 0 || skipBackoff ? 0 : this.opts.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
      const delay = Math.min(maxDelayMs, Math.max(wait, backoff));
      skipBackoff = false;
      if (delay > 0) await this.sleep(delay);
      if (this.opts.signal.aborted) throw closedError();
      const r = await this.once(i, path, body);
      if (typeof r === 'string') {
        this.preferred = i;
        return r;
      }
      if ('draining' in r) {
        this.preferred = i;
        this.leave(i);
        return r.draining;
      }
      if (!r.retry) throw r.error;
      last = r.error;
      // Fail over: the next call starts at the next URL.
      this.preferred = (i + 1) % this.urls.length;
      if (r.error.code === 'SHUTTING_DOWN' || (r.refused && this.urls.length > 1)) {
        this.leave(i);
        if (stoppedLeft-- > 0) {
          attempt--;
          skipBackoff = true;
        }
      }
    }
    throw (
      last ?? new UnavailableError('STORE_UNAVAILABLE', 'no Sequoia server answered (the servers, not their stores, cannot be reached)')
    );
  }

  /**
   * Server i is stopping (draining, or its port refuses connections): later calls go to another one. With one URL (a load
   * balancer, or `--workers N` behind one port) it stays: the server closed
   * the connection, so the next request reaches another process.
   */
  private leave(i: number): void {
    if (this.urls.length === 1) {
      this.coolUntil[i] = 0;
      return;
    }
    this.coolUntil[i] = Math.max(this.coolUntil[i]!, monotonicMs(this.clock) + DRAINING_COOL_MS);
    if (this.preferred === i) this.preferred = (i + 1) % this.urls.length;
  }

  /**
   * A backoff sleep that ends early (resolving) when the client is closed.
   * One listener on the client's signal ends them all: a listener per sleep
   * made Node warn (MaxListenersExceededWarning) once 11 calls backed off at once.
   */
  private sleep(ms: number): Promise<void> {
    if (this.opts.signal.aborted) return Promise.resolve();
    if (this.sleepers === undefined) {
      const sleepers = (this.sleepers = new Set<() => void>());
      this.opts.signal.addEventListener(
        'abort',
        () => {
          for (const wake of sleepers) wake();
          sleepers.clear();
        },
        { once: true },
      );
    }
    const sleepers = this.sleepers;
    return new Promise((resolve) => {
      const wake = (): void => {
        timer.clear(); // closed: no timer left behind
        sleepers.delete(wake);
        resolve();
      };
      const timer = this.timers.after(ms, wake);
      sleepers.add(wake);
    });
  }

  /** The preferred URL unless it is cooling and another one is not. */
  private pick(): number {
    const now = monotonicMs(this.clock);
    const n = this.urls.length;
    for (let k = 0; k < n; k++) {
      const i = (this.preferred + k) % n;
      if (this.coolUntil[i]! <= now) return i;
    }
    // All cooling: the one that is free soonest.
    let best = 0;
    for (let i = 1; i < n; i++) if (this.coolUntil[i]! < this.coolUntil[best]!) best = i;
    return best;
  }

  /**
   * The answer's text; `{ draining }` for a good answer from a server about to stop; or the error,
   * whether to retry, and whether the connection was refused (nothing listens: a restart).
   */
  private async once(
    i: number,
    path: string,
    body?: string,
  ): Promise<string | { draining: string } | { retry: boolean; error: SequoiaError; refused?: boolean }> {
    const url = this.urls[i]! + path;
    // The request's timeout on the timer port (as AbortSignal.timeout would: unref, a TimeoutError).
    const timeout = new AbortController();
    const timer = this.timers
      .after(this.opts.timeoutMs, () => timeout.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')))
      .unref();
    const signal = AbortSignal.any([this.opts.signal, timeout.signal]);
    let res: Response;
    let text: string;
    try {
      res = await this.opts.fetch(
        url,
        body === undefined
          ? { headers: this.headers, signal }
          : { method: 'POST', headers: { ...this.headers, 'content-type': 'application/json' }, body, signal },
      );
      text = await res.text();
    } catch (e) {
      timer.clear();
      if (this.opts.signal.aborted) return { retry: false, error: closedError() };
      const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
      const reason = timedOut ? `no answer within ${this.opts.timeoutMs} ms` : describeNetworkError(e);
      // Not worth trying again at once (with several URLs a refused one is passed over longer: see send).
      this.coolUntil[i] = monotonicMs(this.clock) + this.opts.retry.baseDelayMs;
      // The code stays STORE_UNAVAILABLE (callers branch on it); the message says it is the
      // Sequoia server that cannot be reached, not its store.
      return {
        retry: true,
        refused: reason === 'ECONNREFUSED',
        error: new UnavailableError(
          'STORE_UNAVAILABLE',
          `the Sequoia server ${this.urls[i]} cannot be reached (${reason}); its store was not asked`,
          { cause: e },
        ),
      };
    }
    timer.clear();
    if (res.status === 200 || (body !== undefined && res.status >= 200 && res.status < 300)) {
      return res.headers.get(DRAINING_HEADER) === null ? text : { draining: text };
    }
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), this.clock.now());
    const error = parseError(res.status, text, retryAfterMs, this.urls[i]!);
    const retry = res.status === 503 || res.status === 429 || res.status === 502 || res.status === 504;
    if (retry)
      this.coolUntil[i] = monotonicMs(this.clock) + Math.min(this.opts.retry.maxDelayMs, retryAfterMs ?? this.opts.retry.baseDelayMs);
    return { retry, error };
  }
}

/** Seconds (or an HTTP date, against `nowMs`) to ms; undefined when absent or malformed. */
export function parseRetryAfter(v: string | null, nowMs = systemClock.now()): number | undefined {
  if (v === null) return undefined;
  if (/^[0-9]+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - nowMs);
}

/** `{"error":{"code","message"}}` (JSON routes) or `CODE: message` (Leaf routes) into our error class. */
export function parseError(status: number, text: string, retryAfterMs: number | undefined, url: string): SequoiaError {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (body.error && typeof body.error.code === 'string') {
      return errorFromCode(body.error.code, String(body.error.message ?? ''), retryAfterMs);
    }
  } catch {
    const m = /^([A-Z_]+): ([\s\S]*)$/.exec(text);
    if (m) return errorFromCode(m[1]!, m[2]!, retryAfterMs);
  }
  // Not a Sequoia answer (a proxy, another service on that port).
  const code = status === 404 ? 'NOT_FOUND' : status === 503 ? 'STORE_UNAVAILABLE' : 'INTERNAL';
  return errorFromCode(code, `${url} answered HTTP ${status}: ${text.slice(0, 200)}`, retryAfterMs);
}

function describeNetworkError(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e));
}
