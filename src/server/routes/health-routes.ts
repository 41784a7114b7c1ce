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
  // GET /v1/status lives in status-routes.ts with /metrics and /ui.
}
