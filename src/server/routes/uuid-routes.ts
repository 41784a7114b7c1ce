/** Coordination-free IDs: UUIDv7 (time-ordered, RFC 9562) and UUIDv4. One generator of each per process. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidArgumentError } from '../../core/errors.js';
import { UuidV4Generator, UuidV7Generator } from '../../core/uuid/index.js';
import { type Clock, systemClock } from '../../core/clock.js';
import { type Random, systemRandom } from '../../core/random.js';
import type { Access } from '../auth.js';
import { parseCount } from '../../core/request-rules.js';
import { BatchLane } from '../batch-lane.js';
import type { SequoiaMetrics } from '../metrics.js';
import { headWithoutIds } from './head-route.js';

export async function uuidRoutes(
  app: FastifyInstance,
  opts: { clock?: Clock; random?: Random; access?: Access; lane?: BatchLane; metrics?: SequoiaMetrics },
): Promise<void> {
  const v7 = new UuidV7Generator({ clock: opts.clock ?? systemClock, random: opts.random ?? systemRandom });
  const v4 = new UuidV4Generator({ random: opts.random ?? systemRandom });

  type UuidRequest = FastifyRequest<{ Querystring: { version?: string; count?: string; format?: string } }>;
  /** The request's checks, also all a HEAD does (head-route.ts: it makes no UUID and counts none). */
  const uuidRequest = (req: UuidRequest) => {
    opts.access?.any(req);
    const version = req.query.version ?? '7';
    if (version !== '7' && version !== '4') throw new InvalidArgumentError('version must be 7 or 4');
    const format = req.query.format ?? 'uuid';
    if (format !== 'uuid' && format !== 'ulid') throw new InvalidArgumentError('format must be uuid or ulid');
    if (format === 'ulid' && version !== '7') throw new InvalidArgumentError('format=ulid needs version 7 (a ULID carries its time)');
    return { version, format, count: parseCount(req.query.count) };
  };
  headWithoutIds(app, '/v1/uuid', {}, 'application/json; charset=utf-8', (req) => void uuidRequest(req as UuidRequest));
  app.get<{ Querystring: { version?: string; count?: string; format?: string } }>('/v1/uuid', (req, reply) => {
    const { version, format, count } = uuidRequest(req);
    const serve = () => {
      const ids = new Array<string>(count);
      for (let i = 0; i < count; i++) ids[i] = version === '4' ? v4.next() : format === 'ulid' ? v7.nextUlid() : v7.next();
      opts.metrics?.recordUuids(version === '4' ? 'v4' : format === 'ulid' ? 'ulid' : 'v7', count);
      return reply.type('application/json; charset=utf-8').send(`{"version":${version},"ids":["${ids.join('","')}"]}`);
    };
    // A batch waits its turn, so single IDs that arrive meanwhile are answered first (batch-lane.ts).
    return opts.lane && BatchLane.takesTurn(count) ? opts.lane.turn(count).then(serve) : serve();
  });
}
