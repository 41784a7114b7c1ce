/**
 * HEAD on the routes that hand out IDs takes none (issue 40 item 8). RFC 9110
 * §9.3.2 makes HEAD safe (no side effect is asked for), but fastify answers a
 * HEAD of a GET route by running the GET's handler and dropping the body, so
 * each probe took `count` IDs (and a range from the store when the buffer ran
 * out). Here a HEAD is checked as its GET would be (tag, token, parameters,
 * an unknown tag), so a prober learns whether the GET would succeed, and is
 * answered 200 with the GET's content type and no body; nothing is issued,
 * and no Content-Length is sent (the GET's depends on the IDs it would hold;
 * RFC 9110 §8.6 lets HEAD omit it). Leaf's routes keep taking HEAD (a Leaf
 * client may probe with it) under the same rule.
 *
 * Registered before the route's GET: fastify then makes no HEAD route of its own.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

export type HeadCheck<P = unknown> = (req: FastifyRequest<{ Params: P }>) => void | Promise<void>;

export function headWithoutIds<P>(
  app: FastifyInstance,
  url: string,
  config: Record<string, unknown>,
  contentType: string,
  check: HeadCheck<P>,
): void {
  app.route<{ Params: P }>({
    method: 'HEAD',
    url,
    config,
    handler: async (req, reply) => {
      await check(req);
      return reply.type(contentType).header('cache-control', 'no-store').send();
    },
  });
}
