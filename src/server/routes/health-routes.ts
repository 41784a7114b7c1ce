import type { FastifyInstance } from 'fastify';
import { UnavailableError } from '../../core/errors.js';
import type { IdService } from '../../service/id-service.js';

const READY_TIMEOUT_MS = 1000;

export async function healthRoutes(app: FastifyInstance, opts: { service: IdService; version: string }): Promise<void> {
  const { service } = opts;

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        service.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS);
        }),
      ]);
    } catch (e) {
      throw new UnavailableError('STORE_UNAVAILABLE', `store ${service.store.kind} is not reachable`, { cause: e });
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ready', store: service.store.kind };
  });

  app.get('/v1/status', async () => ({
    version: opts.version,
    uptimeSeconds: Math.round((Date.now() - service.startedAt) / 1000),
    store: { kind: service.store.kind },
    tags: service.snapshot().map((s) => ({
      tag: s.tag,
      current: s.current && { start: String(s.current.start), end: String(s.current.end), next: s.current.next === undefined ? null : String(s.current.next) },
      next: s.next ? { start: String(s.next.start), end: String(s.next.end) } : null,
      remaining: s.remaining,
      nextReady: s.nextReady,
      loading: s.loading,
      step: s.step ?? null,
      storedStep: s.storedStep ?? null,
      lastLoadAt: s.lastLoadAt === undefined ? null : new Date(s.lastLoadAt).toISOString(),
      lastLoadMs: s.lastLoadMs ?? null,
      loads: s.loads,
      loadFailures: s.loadFailures,
      lastError: s.lastError ?? null,
      refusing: s.refusing ?? null,
    })),
  }));
}
