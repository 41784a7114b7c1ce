/**
 * Segment IDs over HTTP. The hot path serialises by hand: IDs are numbers
 * below 2^53 (or bigints above) and go out as decimal strings.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Id } from '../../core/id.js';
import { idsJson, parseCount } from '../../core/request-rules.js';
import { assertTag } from '../../core/validate.js';
import type { BusinessNumberCodec } from '../../core/business-number/index.js';
import type { IdService } from '../../service/id-service.js';
import type { Access } from '../auth.js';
import type { ClientGate } from '../client-gate.js';
import type { FormatRegistry } from '../formats.js';
import { BatchLane } from '../batch-lane.js';
import { leafIdRoute } from './leaf-id-route.js';

const checkTag = (tag: string): string => assertTag(tag);

function sendText(reply: FastifyReply, id: Id): FastifyReply {
  return reply.type('text/plain; charset=utf-8').send(String(id));
}

function formattedJson(tag: string, ids: Id[], codec: BusinessNumberCodec): string {
  return JSON.stringify({ tag, ids: ids.map((id) => codec.encode(id)) });
}

export async function segmentRoutes(
  app: FastifyInstance,
  opts: { service: IdService; formats: FormatRegistry; access?: Access; gate?: ClientGate; lane?: BatchLane },
): Promise<void> {
  const { service, formats, gate, lane } = opts;
  const access = opts.access?.clientTokensEnabled ? opts.access : undefined;
  /** A tag the server does not know costs a store look-up: each client has a share of them. */
  const knownOrShare = (req: FastifyRequest, tag: string): void => {
    if (gate !== undefined && !service.isKnown(tag)) gate.lookUp(req.raw);
  };

  await leafIdRoute<{ tag: string }>(app, '/api/segment/get/:tag', { leaf: true, hot: true }, (req, reply) => {
    const tag = checkTag(req.params.tag);
    access?.tag(req, tag);
    knownOrShare(req, tag);
    const f = (req.query as { format?: string }).format;
    if (f !== undefined) {
      const codec = formats.codec(f);
      return Promise.resolve(service.next(tag)).then((id) => reply.type('text/plain; charset=utf-8').send(codec.encode(id)));
    }
    const v = service.next(tag);
    if (typeof v !== 'object') return sendText(reply, v);
    return v.then((id) => sendText(reply, id));
  });

  app.get<{ Params: { tag: string }; Querystring: { count?: string; format?: string } }>(
    '/v1/segment/:tag',
    { config: { hot: true } },
    (req, reply) => {
      const tag = checkTag(req.params.tag);
      access?.tag(req, tag);
      const count = parseCount(req.query.count);
      knownOrShare(req, tag);
      reply.type('application/json; charset=utf-8');
      // Resolved before any ID is taken: a bad format costs no IDs.
      const codec = req.query.format === undefined ? undefined : formats.codec(req.query.format);
      const serve = () => {
        if (codec !== undefined) return Promise.resolve(service.nextMany(tag, count)).then((ids) => reply.send(formattedJson(tag, ids, codec)));
        const r = service.nextMany(tag, count);
        if (!(r instanceof Promise)) return reply.send(idsJson(tag, r));
        return r.then((ids) => reply.send(idsJson(tag, ids)));
      };
      // A batch waits its turn, so single IDs that arrive meanwhile are answered first (batch-lane.ts).
      return lane && BatchLane.takesTurn(count) ? lane.turn(count).then(serve) : serve();
    },
  );
}
