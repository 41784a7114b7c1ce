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

type SegmentRouteOptions = {
  service: IdService;
  formats: FormatRegistry;
  access?: Access;
  gate?: ClientGate;
  lane?: BatchLane;
  metrics?: SequoiaMetrics;
};

/** What both segment routes check alike before an ID is taken. */
interface SegmentChecks {
  /** The client-token check of a tag (none without client tokens). */
  readonly access: Access | undefined;
  /** A tag the server does not know costs a store look-up: each client has a share of them. */
  readonly knownOrShare: (req: FastifyRequest, tag: string) => void;
  /** A HEAD takes no ID (head-route.ts): it is answered as far as a GET is without one, the tag's existence included. */
  readonly exists: (tag: string) => Promise<void>;
}

export async function segmentRoutes(app: FastifyInstance, opts: SegmentRouteOptions): Promise<void> {
  const { service, gate } = opts;
  const checks: SegmentChecks = {
    access: opts.access?.clientTokensEnabled ? opts.access : undefined,
    knownOrShare: (req, tag) => {
      if (gate !== undefined && !service.isKnown(tag)) gate.lookUp(req.raw);
    },
    exists: async (tag) => {
      if (!service.isKnown(tag)) await service.getTag(tag);
    },
  };
  await leafSegmentRoute(app, opts, checks);
  v1SegmentRoute(app, opts, checks);
}

/** Leaf's `GET /api/segment/get/{tag}`: one ID as text. */
async function leafSegmentRoute(app: FastifyInstance, opts: SegmentRouteOptions, checks: SegmentChecks): Promise<void> {
  const { service, formats } = opts;
  const { access, knownOrShare, exists } = checks;
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
}

/** `GET /v1/segment/{tag}[?count=N]`: IDs as JSON, a reserve counted in the metrics. */
function v1SegmentRoute(app: FastifyInstance, opts: SegmentRouteOptions, checks: SegmentChecks): void {
  const { service, formats, gate, lane, metrics } = opts;
  const { access, knownOrShare, exists } = checks;
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
          recordReserve(metrics, tag, ids, client, gate?.address(req.raw) ?? req.ip);
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

/** A reserve's range in the metrics: its lowest and highest ID (a batch need not come in order). */
function recordReserve(metrics: SequoiaMetrics, tag: string, ids: readonly Id[], client: string, address: string): void {
  let lo = ids[0]!;
  let hi = lo;
  for (const id of ids) {
    if (id < lo) lo = id;
    if (id > hi) hi = id;
  }
  metrics.recordReserve(tag, { client, address, ids: ids.length, first: String(lo), last: String(hi) });
}
