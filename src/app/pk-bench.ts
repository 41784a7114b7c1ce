/**
 * The `sequoia bench pk` targets from a database URL: each engine's adapter
 * (and driver) is loaded only when the URL names it.
 *   postgres://… or postgresql://…   scratch schema (default sequoia_bench_pk)
 *   mysql://… or mariadb://…          scratch database (default sequoia_bench_pk)
 *   sqlite:PATH                       a new file at PATH
 */
import { InvalidArgumentError } from '../core/errors.js';
import type { PkBenchTarget } from '../ports/pk-bench-target.js';
import { redactStoreUrl } from './stores.js';

export { runPkBench, type PkBenchOptions, type PkBenchResult, type PkKindResult, type PkProgress } from '../service/pk-bench-runner.js';

export const DEFAULT_PK_SCRATCH_NAME = 'sequoia_bench_pk';

export interface PkTargetOptions {
  readonly scratch?: string;
  readonly concurrency: number;
}

export async function openPkBenchTarget(url: string, options: PkTargetOptions): Promise<PkBenchTarget> {
  const scratch = options.scratch ?? DEFAULT_PK_SCRATCH_NAME;
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    const { SqlitePkBenchTarget } = await import('../adapters/sqlite/sqlite-pk-bench.js');
    return new SqlitePkBenchTarget(path);
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined && (scheme === 'postgres' || scheme === 'postgresql')) {
    const { PostgresPkBenchTarget } = await import('../adapters/postgres/postgres-pk-bench.js');
    return new PostgresPkBenchTarget({ connectionString: url, scratch, concurrency: options.concurrency });
  }
  if (parsed !== undefined && (scheme === 'mysql' || scheme === 'mariadb')) {
    parsed.protocol = 'mysql:';
    const { MysqlPkBenchTarget } = await import('../adapters/mysql/mysql-pk-bench.js');
    return new MysqlPkBenchTarget({ uri: parsed.toString(), scratch, concurrency: options.concurrency });
  }
  throw new InvalidArgumentError(`--db: unsupported or malformed URL ${JSON.stringify(redactStoreUrl(url))} (use postgres://…, mysql://… or sqlite:PATH)`);
}
