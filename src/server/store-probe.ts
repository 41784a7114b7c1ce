/**
 * Store pings for /readyz and /v1/status: bounded by a timeout, and for the
 * status page cached, so however many pages poll, the store sees one ping per
 * period.
 */
import type { IdService } from '../service/id-service.js';
import type { StoreHealth } from './status-body.js';
import { round1 } from './status-view.js';

const PING_TIMEOUT_MS = 1000;
/** The store is pinged at most once per this period, however many pages poll. */
const PING_CACHE_MS = 1000;

/** Resolves once the store answers; rejects with the store's error, or `timeout` after `ms`. */
export async function pingWithin(service: Pick<IdService, 'ping'>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      service.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Pings the store at most once per PING_CACHE_MS; concurrent callers share one ping. */
export function storeProbe(service: Pick<IdService, 'ping'>): () => Promise<StoreHealth> {
  let last: { at: number; value: StoreHealth } | undefined;
  let inflight: Promise<StoreHealth> | undefined;
  return () => {
    // Monotonic: a wall clock stepped back must not keep a stale answer.
    const now = performance.now();
    if (last && now - last.at < PING_CACHE_MS) return Promise.resolve(last.value);
    inflight ??= timedPing(service).then((value) => {
      last = { at: performance.now(), value };
      inflight = undefined;
      return value;
    });
    return inflight;
  };
}

async function timedPing(service: Pick<IdService, 'ping'>): Promise<StoreHealth> {
  const t0 = performance.now();
  try {
    await pingWithin(service, PING_TIMEOUT_MS);
    return { reachable: true, latencyMs: round1(performance.now() - t0), checkedAt: new Date().toISOString(), error: null };
  } catch (e) {
    const code = e instanceof Error && 'code' in e && typeof e.code === 'string' ? e.code : 'STORE_UNAVAILABLE';
    return { reachable: false, latencyMs: null, checkedAt: new Date().toISOString(), error: code };
  }
}
