/**
 * POST /v1/tags/{tag}/conflicts: a client reports a business unique-key
 * conflict on an ID it got for `tag` (issue 21 §4). The counter
 * sequoia_business_conflicts_total{tag} pages (SequoiaBusinessConflict), the
 * error log line carries tag, id and detail, and /ui shows the tag red.
 * Allowed to a client token that grants the tag, or the admin token (without
 * client tokens: the admin token when one is configured).
 *
 * A report pages someone, so only one that can be true is counted (issue 40
 * item 7): the id must be an ID (a decimal from 0 to 2^63-1; a JSON number
 * only up to 2^53-1, above which it has lost digits), else 400
 * INVALID_ARGUMENT; the tag must exist (served here, or on the store), else
 * 404 TAG_NOT_FOUND. Neither creates a metric series.
 */
import type { FastifyInstance } from 'fastify';
import * as z from 'zod/mini';
import { assertTag } from '../../core/validate.js';
import type { Access } from '../auth.js';
import { parseBody } from '../body.js';
import type { SequoiaMetrics } from '../metrics.js';
import type { SegmentStore } from '../../ports/segment-store.js';
import { parseDecimalId } from '../../core/id.js';
import { InvalidArgumentError } from '../../core/errors.js';
import type { IdService } from '../../service/id-service.js';
import { describeLedgerEntry } from '../../service/ledger-view.js';
import { answerText } from '../public-message.js';

const conflictBody = z.strictObject({
  id: z.union([
    z.string().check(z.minLength(1), z.maxLength(128)),
    z.number().check(z.int(), z.nonnegative(), z.maximum(Number.MAX_SAFE_INTEGER)),
  ]),
  detail: z.optional(z.string().check(z.maxLength(1000))),
});

export async function conflictRoutes(
  app: FastifyInstance,
  opts: {
    access: Access;
    metrics: SequoiaMetrics;
    service: Pick<IdService, 'isKnown' | 'getTag'>;
    store?: Pick<SegmentStore, 'rangesContaining'>;
  },
): Promise<void> {
  const { access, metrics, service, store } = opts;
  /** The ledger entries that hold the ID, as text; a failed lookup is said, never fails the report. */
  const ledgerOf = async (tag: string, value: bigint): Promise<string | string[]> => {
    if (!store?.rangesContaining) return 'this store keeps no range ledger: the range that issued this ID cannot be named';
    try {
      const entries = await store.rangesContaining(tag, value);
      return entries.length === 0 ? 'no range in the ledger covers this ID: Sequoia did not issue it' : entries.map(describeLedgerEntry);
    } catch (e) {
      // The log has the whole error (where the store is); the report says what a client may read.
      app.log.warn({ tag, err: e instanceof Error ? e.message : String(e) }, 'ledger lookup failed');
      return `ledger lookup failed: ${answerText(e, 'an unexpected error (see the server log)')}`;
    }
  };
  app.post<{ Params: { tag: string } }>('/v1/tags/:tag/conflicts', async (req, reply) => {
    const tag = assertTag(req.params.tag);
    if (access.clientTokensEnabled) access.tag(req, tag);
    else access.admin(req);
    const b = parseBody(conflictBody, req.body);
    const id = String(b.id);
    const value = parseDecimalId(id);
    if (value === undefined)
      throw new InvalidArgumentError(
        `id must be an ID: a decimal from 0 to 2^63-1 (as a string above 2^53-1), got ${JSON.stringify(id.slice(0, 40))}`,
      );
    // A tag this server serves is known without a store read; any other is looked up (TAG_NOT_FOUND when the store has none).
    if (!service.isKnown(tag)) await service.getTag(tag);
    const counted = metrics.recordConflict(tag);
    req.log.error(
      { tag, id, detail: b.detail, ledger: await ledgerOf(tag, value), counted },
      'business unique-key conflict reported: an ID may have been issued twice; run sequoia audit (docs/audit.md)',
    );
    return reply.code(202).send({ tag, id, conflicts: metrics.conflictsOf(tag) });
  });
}
