import type { FastifyInstance } from 'fastify';
import type { IdService } from '../../service/id-service.js';
import { type PingOutcome, liveBody, readyBody } from '../health-body.js';
import { pingWithin } from '../store-probe.js';

const READY_TIMEOUT_MS = 1000;

export async function healthRoutes(app: FastifyInstance, opts: { service: IdService }): Promise<void> {
  const { service } = opts;

  app.get('/healthz', async () => liveBody());

  app.get('/readyz', async () => {
    const ping: PingOutcome = await pingWithin(service, READY_TIMEOUT_MS).then(
      () => ({ reachable: true }),
      (cause: unknown) => ({ reachable: false, cause }),
    );
    return readyBody(service.store.kind, ping);
  });
  // GET /v1/status lives in status-routes.ts with /metrics and /ui.
}
