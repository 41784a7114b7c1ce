/** Tag administration: /v1/tags. Admin token required when configured. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod/mini';
import type { TagInfo } from '../../ports/segment-store.js';
import type { IdService } from '../../service/id-service.js';
import { parseBody } from '../body.js';
import { assertTag } from '../../core/validate.js';
import { InvalidArgumentError } from '../../core/errors.js';
import { parseDecimalId } from '../../core/id.js';
import { rangesAnswer } from '../../service/ledger-view.js';

const checkTag = (tag: string): string => assertTag(tag);

const idValue = z.union([z.string(), z.number()]);
const createBody = z.strictObject({
  tag: z.string(),
  step: z.optional(z.number()),
  start: z.optional(idValue),
  description: z.optional(z.string()),
});
const updateBody = z.strictObject({ step: z.optional(z.number()), description: z.optional(z.string()) });
const fenceBody = z.strictObject({ to: idValue });

export function tagJson(t: TagInfo): Record<string, unknown> {
  return {
    tag: t.tag,
    maxId: t.maxId.toString(),
    step: t.step,
    description: t.description,
    updatedAt: t.updatedAt.toISOString(),
    fenceEpoch: t.fenceEpoch,
    generation: t.generation,
  };
}

export async function tagRoutes(
  app: FastifyInstance,
  opts: { service: IdService; checkAdmin: (req: FastifyRequest) => void },
): Promise<void> {
  const { service, checkAdmin } = opts;
  app.addHook('onRequest', async (req) => checkAdmin(req));
  // Admin requests are rare and worth a line each (this hook is scoped to these routes).
  app.addHook('onResponse', (req, reply, done) => {
    if (reply.statusCode < 400)
      req.log.info({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
    done();
  });

  app.get('/v1/tags', { config: { admin: true } }, async () => ({ tags: (await service.listTags()).map(tagJson) }));

  app.post('/v1/tags', { config: { admin: true } }, async (req, reply) => {
    const b = parseBody(createBody, req.body);
    const info = await service.createTag(b);
    return reply.code(201).send(tagJson(info));
  });

  app.get<{ Params: { tag: string } }>('/v1/tags/:tag', { config: { admin: true } }, async (req) =>
    tagJson(await service.getTag(checkTag(req.params.tag))),
  );

  app.patch<{ Params: { tag: string } }>('/v1/tags/:tag', { config: { admin: true } }, async (req) => {
    const b = parseBody(updateBody, req.body);
    return tagJson(await service.updateTag(checkTag(req.params.tag), b));
  });

  app.delete<{ Params: { tag: string } }>('/v1/tags/:tag', { config: { admin: true } }, async (req, reply) => {
    await service.deleteTag(checkTag(req.params.tag));
    return reply.code(204).send();
  });

  // The range ledger: which range, server, time and fence epoch issued an ID (a deleted tag's ranges too).
  app.get<{ Params: { tag: string }; Querystring: { containing?: unknown } }>(
    '/v1/tags/:tag/ranges',
    { config: { admin: true } },
    async (req) => {
      const tag = checkTag(req.params.tag);
      const raw = req.query.containing;
      const id = typeof raw === 'string' ? parseDecimalId(raw) : undefined;
      if (id === undefined) throw new InvalidArgumentError('containing must be a decimal ID from 0 to 2^63-1');
      const store = service.store;
      return rangesAnswer(tag, id, store.rangesContaining ? await store.rangesContaining(tag, id) : undefined);
    },
  );

  app.post<{ Params: { tag: string } }>('/v1/tags/:tag/fence', { config: { admin: true } }, async (req) => {
    const b = parseBody(fenceBody, req.body);
    return tagJson(await service.fence(checkTag(req.params.tag), b.to));
  });
}
