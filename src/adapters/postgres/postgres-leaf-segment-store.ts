/**
 * SegmentStore on Leaf's own table (`leaf_alloc`, name configurable) in
 * PostgreSQL, so Leaf servers (or a port of Leaf's DAO) and Sequoia servers
 * draw from one row without overlap. An allocation is Leaf's IDAllocDao,
 * statement for statement, in one transaction:
 *
 *   BEGIN
 *   UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = $1      -- or max_id + $2 (dynamic step)
 *   SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = $1
 *   SELECT fence_epoch FROM sequoia_leaf_state WHERE leaf_table = … AND tag = $1   -- Sequoia's side table
 *   COMMIT
 *
 * The UPDATE's row lock serialises every allocator, Leaf's and Sequoia's.
 * Leaf's statement has no overflow check; PostgreSQL refuses a BIGINT past
 * 2^63-1 (SQLSTATE 22003), which is answered as ID_SPACE_EXHAUSTED.
 *
 * The Leaf table gains no column: the fence epoch and the tag's generation
 * live in the side table (one row per Leaf table and tag; every `createTag`
 * writes a fresh random generation there). `init` creates the side
 * table only; the Leaf table must exist (a mistyped name must not silently
 * become an empty table where `tag create` would start again at 1).
 */
import { LEAF_SCHEMA } from '../kit/peer/leaf-table.js';
import { PeerSegmentStore } from '../kit/peer/peer-store.js';
import type { ForeignTableOptions } from '../kit/peer/side-table.js';
import { PostgresPool, type PostgresPoolOptions } from './postgres-connection.js';

export interface PostgresLeafSegmentStoreOptions extends PostgresPoolOptions, ForeignTableOptions {}

export class PostgresLeafSegmentStore extends PeerSegmentStore {
  constructor(options: PostgresLeafSegmentStoreOptions) {
    super(
      {
        kind: 'postgres-leaf',
        schema: LEAF_SCHEMA,
        dialect: 'postgres',
        open: () => new PostgresPool(options, 'PostgreSQL Leaf store'),
        howToCreate: "create it as Leaf's scripts/leaf_alloc.sql does (see docs/migrate.md)",
      },
      options,
    );
  }
}
