/**
 * Leaf's routes as Leaf's controller maps them (the two ID routes, and the decode route, mapped the same way). `LeafController`
 * declares `@RequestMapping("/api/segment/get/{key}")` with no method, on
 * Spring Boot 1.5 (Spring MVC 4.3, Tomcat 8.5), so a Leaf server answers an ID
 * to GET, HEAD, POST, PUT, PATCH and DELETE alike, whatever the body; OPTIONS
 * is answered by Spring itself (200, `Allow` of every method but TRACE, no
 * ID taken); TRACE is refused by Tomcat (405); and Spring's trailing-slash
 * match serves `/api/segment/get/{key}/` as the same route. Clients written
 * against Leaf use any of these, so a host-name switch must keep them working.
 */
import { SequoiaError } from '../../core/errors.js';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { type HeadCheck, headWithoutIds } from './head-route.js';

/** The methods whose request takes an ID on Leaf's routes (HEAD comes with GET). */
export const LEAF_ID_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Spring's answer to OPTIONS on a mapping without methods: every HTTP method but TRACE. */
export const LEAF_ALLOW = 'GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS';

type Handler<P> = (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => unknown;

/**
 * Registers `path` and `path/` for every method Leaf's mapping takes, in a
 * scope of its own whose body parser takes any content type and drops the
 * body (still within the server's body limit): Leaf never looks at it, so a
 * form or a JSON body must not be refused. With `form`, a form body
 * (`application/x-www-form-urlencoded`) is kept as its fields, as Spring's
 * `@RequestParam` reads them beside the query's. With `head` (a route that
 * issues IDs), HEAD is checked by it and takes no ID (head-route.ts).
 */
export async function leafIdRoute<P>(
  app: FastifyInstance,
  path: string,
  config: Record<string, unknown>,
  handler: Handler<P>,
  o: { readonly form?: boolean; readonly head?: HeadCheck<P> } = {},
): Promise<void> {
  const { form = false, head } = o;
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, undefined));
    if (form) {
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
        done(null, Object.fromEntries(new URLSearchParams(body as string))),
      );
    }
    for (const url of [path, `${path}/`]) {
      if (head !== undefined) headWithoutIds(scope, url, config, 'text/plain; charset=utf-8', head);
      scope.route<{ Params: P }>({ method: [...LEAF_ID_METHODS] as HTTPMethods[], url, config, handler: handler as never });
      scope.route({ method: 'OPTIONS', url, handler: (_req, reply) => reply.code(200).header('allow', LEAF_ALLOW).send() });
      scope.route({
        method: 'TRACE',
        url,
        config,
        handler: async () => {
          throw new SequoiaError('METHOD_NOT_ALLOWED', `TRACE is not allowed on ${path}; use ${LEAF_ALLOW}`);
        },
      });
    }
  });
}
