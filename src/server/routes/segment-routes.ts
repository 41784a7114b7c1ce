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
import { InvalidArgumentError } from '../../core/errors.js';
import type { SequoiaMetrics } from '../metrics.js';
import { leafIdRoute } from './leaf-id-route.js';
import { headWithoutIds } from './head-route.js';

const checkTag = (tag: string): string => assertTag(tag);

/** `?reserve=1` marks a client's reserve batch (status page); `client` names it (printable ASCII, 1-100 characters). */
function reserveMark(reserve: string | undefined, client: string | undefined): { client: string | undefined } | undefined {
  if (reserve === undefined) {
    if (client !== undefined) throw new InvalidArgumentError('client is only taken with reserve=1');
    return undefined;
  }
  if (reserve !== '1') throw new InvalidArgumentError(`reserve must be 1, got ${JSON.stringify(reserve.slice(0, 20))}`);
  if (client !== undefined && !/^[\x21-\x7e]{1,100}$/.test(client))
    throw new InvalidArgumentError('client must be 1-100 printable ASCII characters without spaces');
  return { client };
}

function sendText(reply: FastifyReply, id: Id): FastifyReply {
  return reply.type('text/plain; charset=utf-8').send(String(id));
}

function formattedJson(tag: string, ids: Id[], codec: BusinessNumberCodec): string {
  return JSON.stringify({ tag, ids: ids.map((id) => codec.encode(id)) });
}

export async function segmentRoutes(
  app: FastifyInstance,
  opts: { service: IdService; formats: FormatRegistry; access?: Access; gate?: ClientGate; lane?: BatchLane; metrics?: SequoiaMetrics },
): Promise<void> {
  const { service, formats, gate, lane, metrics } = opts;
  const access = opts.access?.clientTokensEnabled ? opts.access : undefined;
  /** A tag the server does not know costs a store look-up: each client has a share of them. */
  const knownOrShare = (req: FastifyRequest, tag: string): void => {
    if (gate !== undefined && !service.isKnown(tag)) gate.lookUp(req.raw);
  };

  /** A HEAD takes no ID (head-route.ts): it is answered as far as a GET is without one, the tag's existence included. */
  const exists = async (tag: string): Promise<void> => {
    if (!service.isKnown(tag)) await service.getTag(tag);
  };

  type LeafRequest = FastifyRequest<{ Params: { tag: string } }>;
  const leafRequest = (req: LeafRequest) => {
    const tag = checkTag(req.params.tag);
    access?.tag(req, tag);
    knownOrShare(req, tag);
    const f = (req.query as { format?: string }).format;
    return { tag, codec: f === undefined ? undefined : formats.codec(f) };
  };
  await leafIdRoute<{ tag: string }>(
    app,
    '/api/segment/get/:tag',
    { leaf: true, hot: true },
    (req, reply) => {
      const { tag, codec } = leafRequest(req);
      if (codec !== undefined) {
        return Promise.resolve(service.next(tag)).then((id) => reply.type('text/plain; charset=utf-8').send(codec.encode(id)));
      }
      const v = service.next(tag);
      if (typeof v !== 'object') return sendText(reply, v);
      return v.then((id) => sendText(reply, id));
    },
    { head: (req) => exists(leafRequest(req).tag) },
  );

  type V1Request = FastifyRequest<{
    Params: { tag: string };
    Querystring: { count?: string; format?: string; reserve?: string; client?: string };
  }>;
  const v1Request = (req: V1Request) => {
    const tag = checkTag(req.params.tag);
    access?.tag(req, tag);
    const count = parseCount(req.query.count);
    knownOrShare(req, tag);
    // Resolved before any ID is taken: a bad format costs no IDs.
    const codec = req.query.format === undefined ? undefined : formats.codec(req.query.format);
    return { tag, count, codec, reserve: reserveMark(req.query.reserve, req.query.client) };
  };
  headWithoutIds(app, '/v1/segment/:tag', { hot: true }, 'application/json; charset=utf-8', (req) =>
    exists(v1Request(req as V1Request).tag),
  );
  app.get<{ Params: { tag: string }; Querystring: { count?: string; format?: string; reserve?: string; client?: string } }>(
    '/v1/segment/:tag',
    { config: { hot: true } },
    (req, reply) => {
      const { tag, count, codec, reserve } = v1Request(req);
      reply.type('application/json; charset=utf-8');
      const record = (ids: Id[]): Id[] => {
        if (reserve !== undefined && metrics !== undefined && ids.length > 0) {
          const caller = opts.access?.caller(req);
          const client = reserve.client ?? (caller?.kind === 'client' ? caller.name : '-');
          let lo = ids[0]!;
          let hi = lo;
          for (const id of ids) {
            if (id < lo) lo = id;
            if (id > hi) hi = id;
          }
          metrics.recordReserve(tag, {
            client,
            address: gate?.address(req.raw) ?? req.ip,
            ids: ids.length,
            first: String(lo),
            last: String(hi),
          });
        }
        return ids;
      };
      const serve = () => {
        if (codec !== undefined)
          return Promise.resolve(service.nextMany(tag, count)).then((ids) => reply.send(formattedJson(tag, record(ids), codec)));
        const r = service.nextMany(tag, count);
        if (!(r instanceof Promise)) return reply.send(idsJson(tag, record(r)));
        return r.then((ids) => reply.send(idsJson(tag, record(ids))));
      };
      // A batch waits its turn, so single IDs that arrive meanwhile are answered first (batch-lane.ts).
      return lane && BatchLane.takesTurn(count) ? lane.turn(count).then(serve) : serve();
    },
  );
}
