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

const conflictBody = z
  .object({
    id: z.union([z.string().min(1).max(128), z.number().int().nonnegative()]),
    detail: z.string().max(1000).optional(),
  })
  .strict();

export async function conflictRoutes(app: FastifyInstance, opts: { access: Access; metrics: SequoiaMetrics }): Promise<void> {
  const { access, metrics } = opts;
  app.post<{ Params: { tag: string } }>('/v1/tags/:tag/conflicts', async (req, reply) => {
    const tag = assertTag(req.params.tag);
    if (access.clientTokensEnabled) access.tag(req, tag);
    else access.admin(req);
    const b = parseBody(conflictBody, req.body);
    const id = String(b.id);
    const counted = metrics.recordConflict(tag);
    req.log.error(
      { tag, id, detail: b.detail, ledger: 'no ledger yet: the range that issued this ID cannot be named', counted },
      'business unique-key conflict reported: an ID may have been issued twice; run sequoia audit (docs/audit.md)',
    );
    return reply.code(202).send({ tag, id, conflicts: metrics.conflictsOf(tag) });
  });
}
