/**
 * SegmentStore on Tinyid's own table (`tiny_id_info`, name configurable) in
 * PostgreSQL, so Tinyid servers (or a port of its DAO) and Sequoia servers
 * draw from one row without overlap. An allocation is Tinyid's
 * DbSegmentIdServiceImpl: in one READ COMMITTED transaction, read the row,
 * then the optimistic update, retried while another allocator won the race:
 *
 *   SELECT id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version
 *     FROM tiny_id_info WHERE biz_type = $1
 *   UPDATE tiny_id_info SET max_id = $1, update_time = now(), version = version + 1
 *     WHERE id = $2 AND max_id = $3 AND version = $4 AND biz_type = $5
 *
 * The segment's IDs keep Tinyid's rule (id % delta == remainder): see
 * kit/peer/tinyid-table.ts for the mapping onto Sequoia's ranges. Every write of
 * Sequoia's that moves max_id (fence, give-back) also bumps `version`, so a
 * Tinyid server that read the row before it loses its race and reads again.
 *
 * Tinyid's table gains nothing: the fence epoch, the generation and the
 * description live in the side table (one row per Tinyid table and tag).
 * `init` creates the side table only; Tinyid's table must exist.
 */
import { PeerSegmentStore } from '../kit/peer/peer-store.js';
import type { ForeignTableOptions } from '../kit/peer/side-table.js';
import { TINYID_SCHEMA } from '../kit/peer/tinyid-table.js';
import { PostgresPool, type PostgresPoolOptions } from './postgres-connection.js';

export interface PostgresTinyidSegmentStoreOptions extends PostgresPoolOptions, ForeignTableOptions {}

export class PostgresTinyidSegmentStore extends PeerSegmentStore {
  constructor(options: PostgresTinyidSegmentStoreOptions) {
    super(
      {
        kind: 'postgres-tinyid',
        schema: TINYID_SCHEMA,
        dialect: 'postgres',
        open: () => new PostgresPool(options, 'PostgreSQL Tinyid store'),
        howToCreate: 'create it as docs/migrate.md shows',
      },
      options,
    );
  }
}
