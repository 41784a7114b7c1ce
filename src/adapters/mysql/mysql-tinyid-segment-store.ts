/**
 * SegmentStore on Tinyid's own table (`tiny_id_info`, name configurable) in
 * MySQL/MariaDB, so Tinyid servers and Sequoia servers draw from one row
 * without overlap. An allocation is Tinyid's DbSegmentIdServiceImpl and
 * TinyIdInfoDAOImpl, statement for statement: in one READ COMMITTED
 * transaction (Tinyid's @Transactional isolation; under REPEATABLE READ a
 * retry would re-read its own stale snapshot and never win), read the row,
 * then the optimistic update, retried while another allocator won the race:
 *
 *   select id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version
 *     from tiny_id_info where biz_type = ?
 *   update tiny_id_info set max_id= ?, update_time=now(), version=version+1
 *     where id=? and max_id=? and version=? and biz_type=?
 *
 * The segment's IDs keep Tinyid's rule (id % delta == remainder): see
 * kit/peer/tinyid-table.ts. Every write of Sequoia's that moves max_id (fence,
 * give-back) also bumps `version`. Tinyid's table gains nothing: the fence
 * epoch, the generation and the description live in the side table. `init`
 * creates the side table only; Tinyid's table must exist.
 */
import { PeerSegmentStore } from '../kit/peer/peer-store.js';
import type { ForeignTableOptions } from '../kit/peer/side-table.js';
import { TINYID_SCHEMA } from '../kit/peer/tinyid-table.js';
import { MysqlPool, type MysqlStoreOptions } from './mysql-connection.js';

export interface MysqlTinyidSegmentStoreOptions extends MysqlStoreOptions, ForeignTableOptions {}

export class MysqlTinyidSegmentStore extends PeerSegmentStore {
  constructor(options: MysqlTinyidSegmentStoreOptions) {
    super(
      {
        kind: 'mysql-tinyid',
        schema: TINYID_SCHEMA,
        dialect: 'mysql',
        open: () => new MysqlPool(options, 'MySQL Tinyid store'),
        howToCreate: "create it with Tinyid's tinyid-server/db.sql (see docs/migrate.md)",
      },
      options,
    );
  }
}
