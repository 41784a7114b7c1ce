/**
 * SegmentStore on Leaf's own table (`leaf_alloc`, name configurable) in
 * MySQL/MariaDB, so Leaf servers and Sequoia servers draw from one row
 * without overlap. An allocation is Leaf's IDAllocDao, statement for
 * statement, in one transaction on one connection:
 *
 *   START TRANSACTION
 *   UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?       -- or max_id + ? (dynamic step)
 *   SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = ?
 *   SELECT fence_epoch FROM sequoia_leaf_state WHERE leaf_table = ? AND tag = ?   -- Sequoia's side table
 *   COMMIT
 *
 * InnoDB's row lock, taken by the UPDATE and held to COMMIT, serialises Leaf's
 * allocators and Sequoia's. Leaf's statement has no overflow check; MySQL
 * refuses a BIGINT past 2^63-1 (error 1690), answered as ID_SPACE_EXHAUSTED.
 *
 * The Leaf table gains no column: the fence epoch and the tag's generation
 * live in the side table. `init` creates the side table only; the Leaf table
 * must exist. Tags compare as the Leaf table's collation says (Leaf's script
 * leaves it to the server default, usually case-insensitive; see docs/migrate.md).
 */
import { LEAF_SCHEMA } from '../kit/peer/leaf-table.js';
import { PeerSegmentStore } from '../kit/peer/peer-store.js';
import type { ForeignTableOptions } from '../kit/peer/side-table.js';
import { MysqlPool, type MysqlStoreOptions } from './mysql-connection.js';

export interface MysqlLeafSegmentStoreOptions extends MysqlStoreOptions, ForeignTableOptions {}

export class MysqlLeafSegmentStore extends PeerSegmentStore {
  constructor(options: MysqlLeafSegmentStoreOptions) {
    super(
      {
        kind: 'mysql-leaf',
        schema: LEAF_SCHEMA,
        dialect: 'mysql',
        open: () => new MysqlPool(options, 'MySQL Leaf store'),
        howToCreate: "create it with Leaf's scripts/leaf_alloc.sql (see docs/migrate.md)",
      },
      options,
    );
  }
}
