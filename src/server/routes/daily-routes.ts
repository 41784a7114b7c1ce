/**
 * Date-stamped order numbers over HTTP: `GET /v1/daily/{tag}?timeZone=Z`
 * answers `{"tag","timeZone","day","ids":["20261205-000123",…]}`, the day in
 * zone Z and the day's counter of base tag `tag` (service/daily-numbers.ts:
 * the segment tag `<tag>:<YYYYMMDD>`, made on the day's first number). The
 * numbers never repeat across restarts, servers or a clock stepped back over
 * midnight; they are not gap-free.
 *
 * Who may draw them is who may draw the base tag's segment IDs (a client
 * token granting `tag`, when client tokens are configured). The base tag must
 * exist (an admin made it: `POST /v1/tags`, `sequoia tag create`): a read
 * route makes no tag of a name it was merely sent, so the day tags it makes
 * are only ever those of a base tag an operator made. A base tag or format
 * this server has not issued in yet reads the store first: it costs a share
 * of the caller's unknown-tag look-ups, as an unknown segment tag does.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidArgumentError, TagNotFoundError } from '../../core/errors.js';
import {
  DAILY_DEFAULT_DIGITS,
  type DailyNumberFormat,
  parseDailyDigits,
  validateTimeZone,
} from '../../core/business-number/daily-number.js';
import { parseCount } from '../../core/request-rules.js';
import { assertTag } from '../../core/validate.js';
import { DailyNumberIssuers } from '../../service/daily-numbers.js';
import type { IdService } from '../../service/id-service.js';
import type { Access } from '../auth.js';
import { BatchLane } from '../batch-lane.js';
import type { ClientGate } from '../client-gate.js';
import { headWithoutIds } from './head-route.js';

type DailyQuery = { timeZone?: string; count?: string; digits?: string; check?: string };
type DailyRequest = FastifyRequest<{ Params: { tag: string }; Querystring: DailyQuery }>;

function parseCheck(text: string | undefined): boolean {
  if (text === undefined || text === '0') return false;
  if (text === '1') return true;
  throw new InvalidArgumentError(`check must be 1 or 0, got ${JSON.stringify(text.slice(0, 20))}`);
}

export async function dailyRoutes(
  app: FastifyInstance,
  opts: { service: IdService; access?: Access; gate?: ClientGate; lane?: BatchLane },
): Promise<void> {
  const issuers = new DailyNumberIssuers({ service: opts.service });
  /** Base tags found in the store (bounded like the issuers: a name forgotten is looked up again). */
  const bases = new Set<string>();
  const assertBase = async (tag: string): Promise<void> => {
    if (bases.has(tag)) return;
    if ((await opts.service.store.getTag(tag)) === undefined) {
      throw new TagNotFoundError(
        tag,
        `base tag "${tag}" does not exist: create it first (POST /v1/tags, sequoia tag create); its day tags ${tag}:YYYYMMDD are made on each day's first number`,
      );
    }
    if (bases.size >= 1024) bases.clear();
    bases.add(tag);
  };
  const access = opts.access?.clientTokensEnabled ? opts.access : undefined;

  /** Everything checked before a number is taken; all a HEAD does (head-route.ts). */
  const dailyRequest = (req: DailyRequest) => {
    const tag = assertTag(req.params.tag);
    access?.tag(req, tag);
    const count = parseCount(req.query.count);
    if (req.query.timeZone === undefined)
      throw new InvalidArgumentError('timeZone is required: an IANA time zone name such as Asia/Shanghai or UTC');
    const format: Required<DailyNumberFormat> = {
      timeZone: validateTimeZone(req.query.timeZone, 'timeZone'),
      digits: parseDailyDigits(req.query.digits) ?? DAILY_DEFAULT_DIGITS,
      check: parseCheck(req.query.check),
    };
    if (issuers.isNew(tag, format)) {
      opts.gate?.lookUp(req.raw);
      // Also refuses a base tag too long for its day tags (`<tag>:YYYYMMDD` within 128 characters).
      issuers.issuer(tag, format);
    }
    return { tag, count, format };
  };

  headWithoutIds(app, '/v1/daily/:tag', {}, 'application/json; charset=utf-8', (req) => void dailyRequest(req as DailyRequest));
  app.get<{ Params: { tag: string }; Querystring: DailyQuery }>('/v1/daily/:tag', async (req, reply) => {
    const { tag, count, format } = dailyRequest(req);
    await assertBase(tag);
    if (opts.lane && BatchLane.takesTurn(count)) await opts.lane.turn(count);
    const ids = await issuers.issuer(tag, format).nextMany(count);
    return reply
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ tag, timeZone: format.timeZone, day: (ids[0] as string).slice(0, 8), ids }));
  });
}
