/**
 * The `sequoia bench pk` targets from a database URL: each engine's adapter
 * (and driver) is loaded only when the URL names it.
 *   postgres://… or postgresql://…   scratch schema (default sequoia_bench_pk)
 *   mysql://… or mariadb://…          scratch database (default sequoia_bench_pk)
 *   sqlite:PATH                       a new file at PATH
 */
import { DEFAULT_PK_SCRATCH } from '../adapters/kit/pk-bench/pk-bench-kit.js';
import type { PkBenchTarget } from '../ports/pk-bench-target.js';
import { databaseUrl } from './stores.js';

export { runPkBench, type PkBenchOptions, type PkBenchResult, type PkKindResult, type PkProgress } from '../service/pk-bench-runner.js';

export interface PkTargetOptions {
  readonly scratch?: string;
  readonly concurrency: number;
}

export async function openPkBenchTarget(url: string, options: PkTargetOptions): Promise<PkBenchTarget> {
  const scratch = options.scratch ?? DEFAULT_PK_SCRATCH;
  const db = databaseUrl(url);
  switch (db.engine) {
    case 'sqlite': {
      const { SqlitePkBenchTarget } = await import('../adapters/sqlite/sqlite-pk-bench.js');
      return new SqlitePkBenchTarget(db.path);
    }
    case 'postgres': {
      const { PostgresPkBenchTarget } = await import('../adapters/postgres/postgres-pk-bench.js');
      return new PostgresPkBenchTarget({ connectionString: db.url, scratch, concurrency: options.concurrency });
    }
    case 'mysql': {
      const { MysqlPkBenchTarget } = await import('../adapters/mysql/mysql-pk-bench.js');
      return new MysqlPkBenchTarget({ uri: db.url, scratch, concurrency: options.concurrency });
    }
  }
}
