/**
 * POST /v1/tags/{tag}/conflicts: a client reports a business unique-key
 * conflict on an ID it got for `tag` (issue 21 §4). The counter
 * sequoia_business_conflicts_total{tag} pages (SequoiaBusinessConflict), the
 * error log line carries tag, id and detail, and /ui shows the tag red.
 * Allowed to a client token that grants the tag, or the admin token (without
 * client tokens: the admin token when one is configured).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { assertTag } from '../../core/validate.js';
import type { Access } from '../auth.js';
import { parseBody } from '../body.js';
import type { SequoiaMetrics } from '../metrics.js';
import type { SegmentStore } from '../../ports/segment-store.js';
import { parseDecimalId } from '../../core/id.js';
import { describeLedgerEntry } from '../../service/ledger-view.js';

const conflictBody = z
  .object({
    id: z.union([z.string().min(1).max(128), z.number().int().nonnegative()]),
    detail: z.string().max(1000).optional(),
  })
  .strict();

export async function conflictRoutes(
  app: FastifyInstance,
  opts: { access: Access; metrics: SequoiaMetrics; store?: Pick<SegmentStore, 'rangesContaining'> },
): Promise<void> {
  const { access, metrics, store } = opts;
  /** The ledger entries that hold the ID, as text; a failed lookup is said, never fails the report. */
  const ledgerOf = async (tag: string, id: string): Promise<string | string[]> => {
    const value = parseDecimalId(id);
    if (value === undefined) return 'not a segment ID: not traced';
    if (!store?.rangesContaining) return 'this store keeps no range ledger: the range that issued this ID cannot be named';
    try {
      const entries = await store.rangesContaining(tag, value);
      return entries.length === 0 ? 'no range in the ledger covers this ID: Sequoia did not issue it' : entries.map(describeLedgerEntry);
    } catch (e) {
      return `ledger lookup failed: ${e instanceof Error ? e.message : String(e)}`;
    }
  };
  app.post<{ Params: { tag: string } }>('/v1/tags/:tag/conflicts', async (req, reply) => {
    const tag = assertTag(req.params.tag);
    if (access.clientTokensEnabled) access.tag(req, tag);
    else access.admin(req);
    const b = parseBody(conflictBody, req.body);
    const id = String(b.id);
    const counted = metrics.recordConflict(tag);
    req.log.error(
      { tag, id, detail: b.detail, ledger: await ledgerOf(tag, id), counted },
      'business unique-key conflict reported: an ID may have been issued twice; run sequoia audit (docs/audit.md)',
    );
    return reply.code(202).send({ tag, id, conflicts: metrics.conflictsOf(tag) });
  });
}
