/**
 * Snowflake IDs from a `--workers 2` server and a one-process server on one
 * SQLite store, worker ids leased from it, four clients on their own
 * connections (so both workers serve), batches of up to 200 IDs: two
 * processes sharing a worker id would hand out the same (tick, worker,
 * sequence) within milliseconds. Workers are killed and replaced meanwhile.
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { processFaults } from '../harness/faults.js';

export const snowflakeWorkers: Scenario = {
  name: 'snowflake-workers',
  short: true,
  about: 'snowflake, lease provider on SQLite, --workers 2 plus a single server, clients on separate connections, workers killed',
  async run(ctx: Context): Promise<CheckSpec> {
    const store = `sqlite:${join(ctx.dir, 'sequoia.db')}`;
    const servers = [2, 1].map((w, i) =>
      ctx.server({
        name: `S${i}`,
        args: ['--store', store, '--state-dir', join(ctx.dir, `state${i}`), '--workers', String(w), '--worker-lease-ttl-ms', '3000'],
      }),
    );
    for (const s of servers) await s.start();
    const ms = ctx.ms(6000, 40_000);
    const ops = [
      { route: 'v1-snowflake' as const, key: 'twitter', count: 200 },
      { route: 'v1-snowflake' as const, key: 'twitter', count: 37 },
    ];
    await Promise.all([
      ctx.load(4, ms, { servers: () => servers, ops, maxRequests: 100_000, sockets: 1 }),
      processFaults(ctx, servers.slice(0, 1), Date.now() + ms, ['kill-worker']),
    ]);
    return { keys: { 'snowflake:twitter': { layout: TWITTER } } };
  },
};
