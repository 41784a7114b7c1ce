/**
 * Snowflake IDs over HTTP:
 *   GET /api/snowflake/get/{tag}          Leaf-compatible text/plain ID (default layout; the tag is checked, not used:
 *                                         snowflake IDs are unique per layout, not per tag)
 *   GET /v1/snowflake?count=N&layout=L&shard=S|shardKey=K   {"layout","ids":[…]}
 *   GET /v1/explain/{id}?layout=L         {"id","layout","time","timestampMs",<fields>,"sequence"}
 * IDs are decimal strings. `shardKey` (instagram) hashes to a shard (FNV-1a mod shards).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { InvalidArgumentError } from '../../core/errors.js';
import { explainId } from '../../core/snowflake/explain.js';
import { getLayout } from '../../core/snowflake/layout.js';
import type { SnowflakeService } from '../../service/snowflake-service.js';
import type { Access } from '../auth.js';
import { checkTag, parseCount } from './segment-routes.js';

const LAYOUT = /^[a-z][a-z0-9_-]{0,39}$/;
const SHARD = /^(0|[1-9][0-9]{0,8})$/;

function layoutParam(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !LAYOUT.test(raw)) throw new InvalidArgumentError('layout must be a layout name (e.g. twitter, leaf, sonyflake)');
  return raw;
}

/** FNV-1a 32-bit of a shard key, mod the shard count. */
export function shardOf(key: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

function shardParam(service: SnowflakeService, layout: string | undefined, q: { shard?: string; shardKey?: string }): number {
  const l = service.layout(layout);
  if (l.shardBits === 0) {
    if (q.shard !== undefined || q.shardKey !== undefined) throw new InvalidArgumentError(`layout ${l.name} has no shard field`);
    return 0;
  }
  const shards = 2 ** l.shardBits;
  if (q.shard !== undefined && q.shardKey !== undefined) throw new InvalidArgumentError('give shard or shardKey, not both');
  if (q.shardKey !== undefined) {
    if (typeof q.shardKey !== 'string' || q.shardKey.length === 0 || q.shardKey.length > 256) throw new InvalidArgumentError('shardKey must be 1-256 characters');
    return shardOf(q.shardKey, shards);
  }
  if (q.shard === undefined) throw new InvalidArgumentError(`layout ${l.name} needs shard (0..${shards - 1}) or shardKey`);
  if (typeof q.shard !== 'string' || !SHARD.test(q.shard) || Number(q.shard) >= shards) {
    throw new InvalidArgumentError(`shard must be an integer from 0 to ${shards - 1}`);
  }
  return Number(q.shard);
}

function idsJson(layout: string, ids: string[]): string {
  return `{"layout":${JSON.stringify(layout)},"ids":["${ids.join('","')}"]}`;
}

function sendText(reply: FastifyReply, id: string): FastifyReply {
  return reply.type('text/plain; charset=utf-8').send(id);
}

export async function snowflakeRoutes(app: FastifyInstance, opts: { snowflake: SnowflakeService; access?: Access }): Promise<void> {
  const sf = opts.snowflake;
  const access = opts.access;

  app.get<{ Params: { tag: string } }>('/api/snowflake/get/:tag', { config: { leaf: true, hot: true } }, (req, reply) => {
    access?.tag(req, checkTag(req.params.tag));
    const v = sf.next();
    if (typeof v === 'string') return sendText(reply, v);
    return v.then((id) => sendText(reply, id));
  });

  app.get<{ Querystring: { count?: string; layout?: string; shard?: string; shardKey?: string } }>(
    '/v1/snowflake',
    { config: { hot: true } },
    (req, reply) => {
      access?.any(req);
      const count = parseCount(req.query.count);
      const layout = layoutParam(req.query.layout);
      const name = sf.layout(layout).name;
      const shard = shardParam(sf, layout, req.query);
      const r = sf.nextMany(name, count, shard);
      reply.type('application/json; charset=utf-8');
      if (!(r instanceof Promise)) return reply.send(idsJson(name, r));
      return r.then((ids) => reply.send(idsJson(name, ids)));
    },
  );

  app.get<{ Params: { id: string }; Querystring: { layout?: string } }>('/v1/explain/:id', async (req) => {
    access?.any(req);
    return sf.explain(req.params.id, layoutParam(req.query.layout));
  });
}

/**
 * Leaf's decode route, answering Leaf's JSON for the `leaf` layout:
 * `{"timestamp":"<ms>(<yyyy-MM-dd HH:mm:ss.SSS>)","sequenceId":"…","workerId":"…"}`
 * (strings, as Leaf's Map<String, String>). Leaf formats the time in the JVM's
 * zone; Sequoia in UTC. A bad id is Leaf-style text/plain `INVALID_ARGUMENT: …`.
 * Served whether or not this server issues snowflake IDs: decoding needs no worker id.
 */
export async function leafDecodeRoute(app: FastifyInstance, opts: { access?: Access }): Promise<void> {
  const leaf = getLayout('leaf');
  app.get<{ Querystring: { snowflakeId?: string } }>('/api/decode/snowflakeId', { config: { leaf: true } }, async (req, reply) => {
    opts.access?.any(req);
    const raw = req.query.snowflakeId;
    if (typeof raw !== 'string' || raw === '') throw new InvalidArgumentError('snowflakeId is required: a decimal ID of the leaf layout');
    const e = explainId(raw, leaf);
    const time = new Date(e.timestampMs).toISOString().replace('T', ' ').slice(0, 23);
    return reply
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ timestamp: `${e.timestampMs}(${time})`, sequenceId: String(e.sequence), workerId: String(e.worker) }));
  });
}
