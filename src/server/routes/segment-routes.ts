/**
 * Segment IDs over HTTP. The hot path serialises by hand: IDs are numbers
 * below 2^53 (or bigints above) and go out as decimal strings.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { InvalidArgumentError } from '../../core/errors.js';
import type { Id } from '../../core/id.js';
import { TAG_PATTERN } from '../../core/validate.js';
import type { IdService } from '../../service/id-service.js';

export const MAX_COUNT = 10_000;
const COUNT = /^[1-9][0-9]{0,4}$/;

export function parseCount(raw: unknown): number {
  if (raw === undefined) return 1;
  if (typeof raw !== 'string' || !COUNT.test(raw) || Number(raw) > MAX_COUNT) {
    throw new InvalidArgumentError(`count must be an integer from 1 to ${MAX_COUNT}`);
  }
  return Number(raw);
}

export function checkTag(tag: string): string {
  if (!TAG_PATTERN.test(tag)) {
    throw new InvalidArgumentError(`tag must match ${TAG_PATTERN.source} (1-128 letters, digits, _ . -)`);
  }
  return tag;
}

function sendText(reply: FastifyReply, id: Id): FastifyReply {
  return reply.type('text/plain; charset=utf-8').send(String(id));
}

function idsJson(tag: string, ids: Id[]): string {
  return `{"tag":${JSON.stringify(tag)},"ids":["${ids.join('","')}"]}`;
}

export async function segmentRoutes(app: FastifyInstance, opts: { service: IdService }): Promise<void> {
  const service = opts.service;

  app.get<{ Params: { tag: string } }>(
    '/api/segment/get/:tag',
    { config: { leaf: true, hot: true } },
    (req, reply) => {
      const v = service.next(checkTag(req.params.tag));
      if (typeof v !== 'object') return sendText(reply, v);
      return v.then((id) => sendText(reply, id));
    },
  );

  app.get<{ Params: { tag: string }; Querystring: { count?: string } }>(
    '/v1/segment/:tag',
    { config: { hot: true } },
    (req, reply) => {
      const tag = checkTag(req.params.tag);
      const count = parseCount(req.query.count);
      const r = service.nextMany(tag, count);
      reply.type('application/json; charset=utf-8');
      if (!(r instanceof Promise)) return reply.send(idsJson(tag, r));
      return r.then((ids) => reply.send(idsJson(tag, ids)));
    },
  );
}
