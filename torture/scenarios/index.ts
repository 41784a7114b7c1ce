/** Every scenario, in the order the sets run them. */
import type { Scenario } from '../harness/context.js';
import { CLOCK_SCENARIOS } from './clock-jumps.js';
import { dbLock, stateDirFull } from './disk-and-locks.js';
import { leasePause } from './lease-pause.js';
import { leaseSnapshotLease, leaseSnapshotStatic } from './lease-snapshot.js';
import { redisLeases } from './redis-leases.js';
import { manyServers, manyServersMixed } from './many-servers.js';
import { multiStoreFrozen } from './multi-store.js';
import { segmentKills } from './segment-kills.js';
import { storeFaultsMysql, storeFaultsPostgres, storeFaultsRedis } from './store-faults.js';
import { strictCoalesceMysql, strictCoalescePostgres, strictCoalesceRedis } from './strict-coalesce.js';
import { snowflakeWorkers } from './snowflake-workers.js';
import { restorePostgresSkewed, restoreSqlite, restoreSqliteSkewed } from './restore.js';
import { recreatePostgres, recreateSqlite } from './recreate.js';
import { rollingRestart } from './rolling-restart.js';
import { etcdLeases } from './etcd-leases.js';

export const SCENARIOS: readonly Scenario[] = [
  segmentKills,
  snowflakeWorkers,
  storeFaultsPostgres,
  storeFaultsMysql,
  storeFaultsRedis,
  strictCoalescePostgres,
  strictCoalesceMysql,
  strictCoalesceRedis,
  ...CLOCK_SCENARIOS,
  leasePause,
  leaseSnapshotLease,
  leaseSnapshotStatic,
  redisLeases,
  manyServers,
  manyServersMixed,
  multiStoreFrozen,
  restoreSqlite,
  restoreSqliteSkewed,
  restorePostgresSkewed,
  recreateSqlite,
  recreatePostgres,
  stateDirFull,
  dbLock,
  rollingRestart,
  etcdLeases,
];
