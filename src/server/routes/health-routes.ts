import type { FastifyInstance } from 'fastify';
import type { IdService } from '../../service/id-service.js';
import { type PingOutcome, type TagReadiness, liveBody, readyBody } from '../health-body.js';
import type { Drain } from '../http-front.js';
import { pingWithin } from '../store-probe.js';

const READY_TIMEOUT_MS = 1000;
/** The state directory is probed at most once per this period, however often /readyz is polled. */
const STATE_DIR_PROBE_MS = 1000;

export interface HealthRouteOptions {
  readonly service: IdService;
  /** Resolves when the state directory takes a write (app/start-server.ts); none: not checked. */
  readonly stateDirProbe?: (() => Promise<void>) | undefined;
  /** Readiness is refused once the server starts draining. */
  readonly drain?: Drain | undefined;
}

export async function healthRoutes(app: FastifyInstance, opts: HealthRouteOptions): Promise<void> {
  const { service } = opts;
  const stateDir = opts.stateDirProbe && cachedOutcome(opts.stateDirProbe, STATE_DIR_PROBE_MS);
  // The first probe (a write and an fsync) runs now, beside the rest of the start, not in the first /readyz.
  void stateDir?.();

  app.get('/healthz', async () => liveBody());

  app.get('/readyz', async () => {
    // Draining answers at once: no store ping to wait for on the way out.
    if (opts.drain?.leaving === true) return readyBody({ storeKind: service.store.kind, ping: { reachable: true }, draining: true });
    const [ping, dir] = await Promise.all([
      outcome(() => pingWithin(service, READY_TIMEOUT_MS)),
      stateDir?.(),
      // What a request would do for a tag that cannot issue (a server out of rotation gets none), bounded.
      within(service.retryFailedTags(), READY_TIMEOUT_MS),
    ]);
    const tags: TagReadiness[] = service.snapshot().map((s) => ({
      tag: s.tag,
      remaining: s.remaining,
      refusing: s.refusing,
      // A strict tag buffers nothing and keeps its last failure for the status page: it can issue while the store answers.
      lastLoadFailed: s.lastError !== undefined && !service.isStrict(s.tag),
    }));
    return readyBody({ storeKind: service.store.kind, ping, stateDir: dir, tags, draining: opts.drain?.leaving });
  });
  // GET /v1/status lives in status-routes.ts with /metrics and /ui.
}

/** Waits for `p` at most `ms` (it goes on in the background). */
function within(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))]).finally(() => clearTimeout(timer));
}

function outcome(f: () => Promise<void>): Promise<PingOutcome> {
  return f().then(
    () => ({ reachable: true }),
    (cause: unknown) => ({ reachable: false, cause }),
  );
}

/** `f`'s outcome, run at most once per `ms`; concurrent callers share one run. */
function cachedOutcome(f: () => Promise<void>, ms: number): () => Promise<PingOutcome> {
  let last: { at: number; value: PingOutcome } | undefined;
  let inflight: Promise<PingOutcome> | undefined;
  return () => {
    if (last && performance.now() - last.at < ms) return Promise.resolve(last.value);
    inflight ??= outcome(f).then((value) => {
      last = { at: performance.now(), value };
      inflight = undefined;
      return value;
    });
    return inflight;
  };
}
