/**
 * The fallback space's leases (docs/http-api.md, docs/operations.md
 * "Fallback space"): `POST /v1/fallback/{tag}/lease` takes or renews a
 * fallback worker id of the tag for the calling client; `POST
 * /v1/fallback/{tag}/release` gives it up at the client's close. Allowed to
 * whoever may draw the tag's IDs (a client token granting it when tokens are
 * configured). A tag without a fallback space answers NOT_FOUND.
 */
import type { FastifyInstance } from 'fastify';
import * as z from 'zod/mini';
import { assertTag } from '../../core/validate.js';
import type { FallbackLeases } from '../../service/fallback-leases.js';
import type { Access } from '../auth.js';
import { parseBody } from '../body.js';
import type { ClientGate } from '../client-gate.js';

const leaseBody = z.strictObject({
  owner: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  workerId: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(1_000_000))),
  generation: z.optional(z.number().check(z.int(), z.minimum(0))),
  lastTick: z.optional(z.number().check(z.int(), z.minimum(-1))),
});

export async function fallbackRoutes(
  app: FastifyInstance,
  opts: { fallback: FallbackLeases; access: Access; gate: ClientGate },
): Promise<void> {
  const { fallback, access, gate } = opts;
  app.post<{ Params: { tag: string } }>('/v1/fallback/:tag/lease', async (req, reply) => {
    const tag = assertTag(req.params.tag);
    if (access.clientTokensEnabled) access.tag(req, tag);
    const b = parseBody(leaseBody, req.body ?? {});
    const lease = await fallback.lease(tag, b, gate.key(req.raw));
    req.log.info({ tag, workerId: lease.workerId, owner: lease.owner, expiresAtMs: lease.expiresAtMs }, 'fallback lease');
    return reply.send(lease);
  });
  app.post<{ Params: { tag: string } }>('/v1/fallback/:tag/release', async (req, reply) => {
    const tag = assertTag(req.params.tag);
    if (access.clientTokensEnabled) access.tag(req, tag);
    await fallback.release(tag, parseBody(leaseBody, req.body ?? {}));
    return reply.code(204).send();
  });
}
