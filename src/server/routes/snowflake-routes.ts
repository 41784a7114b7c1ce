/**
 * Snowflake IDs over HTTP:
 *   GET|POST|… /api/snowflake/get/{tag}   Leaf-compatible text/plain ID (default layout; the tag is checked, not used:
 *                                         snowflake IDs are unique per layout, not per tag)
 *   GET /v1/snowflake?count=N&layout=L&shard=S|shardKey=K   {"layout","ids":[…]}
 *   GET /v1/explain/{id}?layout=L         {"id","layout","time","timestampMs",<fields>,"sequence"}
 * IDs are decimal strings. `shardKey` (instagram) hashes to a shard (core/request-rules.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidArgumentError, SequoiaError } from '../../core/errors.js';
import { explainId } from '../../core/snowflake/explain.js';
import { type Layout, getLayout, joinWorker } from '../../core/snowflake/layout.js';
import type { SnowflakeService } from '../../service/snowflake-service.js';
import type { Access } from '../auth.js';
import { parseCount, parseLayoutName, parseShard, snowflakeIdsJson } from '../../core/request-rules.js';
import { assertTag } from '../../core/validate.js';
import { BatchLane } from '../batch-lane.js';
import { leafIdRoute } from './leaf-id-route.js';
import { headWithoutIds } from './head-route.js';

const checkTag = (tag: string): string => assertTag(tag);

function sendText(reply: FastifyReply, id: string): FastifyReply {
  return reply.type('text/plain; charset=utf-8').send(id);
}

export async function snowflakeRoutes(
  app: FastifyInstance,
  opts: { snowflake: SnowflakeService; access?: Access; lane?: BatchLane },
): Promise<void> {
  const sf = opts.snowflake;
  const access = opts.access;
  const lane = opts.lane;

  const leafCheck = (req: FastifyRequest<{ Params: { tag: string } }>): void => access?.tag(req, checkTag(req.params.tag));
  await leafIdRoute<{ tag: string }>(
    app,
    '/api/snowflake/get/:tag',
    { leaf: true, hot: true },
    (req, reply) => {
      leafCheck(req);
      const v = sf.next();
      if (typeof v === 'string') return sendText(reply, v);
      return v.then((id) => sendText(reply, id));
    },
    { head: leafCheck },
  );

  type V1Request = FastifyRequest<{ Querystring: { count?: string; layout?: string; shard?: string; shardKey?: string } }>;
  /** The request's checks, also all a HEAD does (head-route.ts). */
  const v1Request = (req: V1Request) => {
    access?.any(req);
    const count = parseCount(req.query.count);
    const l = sf.layout(parseLayoutName(req.query.layout));
    return { count, name: l.name, shard: parseShard(l, req.query) };
  };
  headWithoutIds(app, '/v1/snowflake', { hot: true }, 'application/json; charset=utf-8', (req) => void v1Request(req as V1Request));
  app.get<{ Querystring: { count?: string; layout?: string; shard?: string; shardKey?: string } }>(
    '/v1/snowflake',
    { config: { hot: true } },
    (req, reply) => {
      const { count, name, shard } = v1Request(req);
      reply.type('application/json; charset=utf-8');
      const serve = () => {
        const r = sf.nextMany(name, count, shard);
        if (!(r instanceof Promise)) return reply.send(snowflakeIdsJson(name, r));
        return r.then((ids) => reply.send(snowflakeIdsJson(name, ids)));
      };
      // A batch waits its turn, so single IDs that arrive meanwhile are answered first (batch-lane.ts).
      return lane && BatchLane.takesTurn(count) ? lane.turn(count).then(serve) : serve();
    },
  );

  app.get<{ Params: { id: string }; Querystring: { layout?: string } }>('/v1/explain/:id', async (req) => {
    access?.any(req);
    return sf.explain(req.params.id, parseLayoutName(req.query.layout));
  });
}

/**
 * Leaf's decode route, answering Leaf's JSON for the `leaf` layout:
 * `{"timestamp":"<ms>(<yyyy-MM-dd HH:mm:ss.SSS>)","sequenceId":"…","workerId":"…"}`
 * (strings, as Leaf's Map<String, String>). Leaf formats the time in the JVM's
 * zone; Sequoia in UTC. A bad id is Leaf-style text/plain `INVALID_ARGUMENT: …`.
 * Served whether or not this server issues snowflake IDs: decoding needs no worker id.
 */
export async function leafDecodeRoute(app: FastifyInstance, opts: { access?: Access; lineage?: Layout | undefined }): Promise<void> {
  // A server whose default layout is a lineage decodes with it: the version is picked from the value and named.
  const leaf = opts.lineage?.lineage ? opts.lineage : getLayout('leaf');
  // `@RequestMapping("/api/decode/snowflakeId")` has no method either: the methods and trailing slash of the ID routes.
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    opts.access?.any(req);
    const query = req.query as { snowflakeId?: unknown };
    const form = req.body as { snowflakeId?: unknown } | undefined;
    const raw = query.snowflakeId ?? form?.snowflakeId;
    if (typeof raw !== 'string' || raw === '') throw new InvalidArgumentError('snowflakeId is required: a decimal ID of the leaf layout');
    const e = explainId(raw, leaf);
    const time = new Date(e.timestampMs).toISOString().replace('T', ' ').slice(0, 23);
    const version = leaf.lineage?.versions.find((v) => v.version === e.version);
    const workerId = version ? joinWorker(version.layout, e as unknown as Record<string, number>) : e.worker;
    const body = {
      timestamp: `${e.timestampMs}(${time})`,
      sequenceId: String(e.sequence),
      workerId: String(workerId),
      ...(version ? { layout: version.layout.name, version: String(version.version) } : {}),
    };
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
  };
  await leafIdRoute(app, '/api/decode/snowflakeId', { leaf: true }, handler, { form: true });
}

/**
 * Without the snowflake generator its routes answer why, never a placeholder
 * ID: Leaf's route and the JSON routes alike (a bare "no route" would send an
 * operator looking for a typo in the path).
 */
export async function snowflakeDisabledRoute(app: FastifyInstance): Promise<void> {
  const disabled = async () => {
    throw new SequoiaError(
      'NOT_FOUND',
      'the snowflake generator is not enabled on this server: the default worker-id provider (lease) needs a store that holds leases; set --worker-id-provider (static:N, k8s-ordinal, zookeeper:…)',
    );
  };
  await leafIdRoute(app, '/api/snowflake/get/:tag', { leaf: true }, disabled);
  app.get('/v1/snowflake', disabled);
  app.get('/v1/explain/:id', disabled);
}
