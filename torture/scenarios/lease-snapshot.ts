/**
 * The worker-lease store restored from an older snapshot (the seed's table of
 * failures: "identity allocation may hand a worker id out again") while the
 * next holder's clock is behind the previous holder's. Server A takes
 * snowflake IDs; the SQLite file (segments and leases) is restored to a copy
 * taken before; the server starts again on the same worker id, on the same
 * state directory, with its clock behind the last tick A used. The recorded
 * last tick (local or in the store) must keep the two runs apart, or the start
 * must be refused.
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { sleep } from '../harness/rng.js';

export function leaseSnapshot(provider: 'lease' | 'static', short: boolean): Scenario {
  return {
    name: `lease-snapshot-${provider}`,
    short,
    about: `worker-lease store (SQLite) restored from an older snapshot, the next holder (${provider}) on the same id with its clock behind`,
    async run(ctx: Context): Promise<CheckSpec> {
      const db = join(ctx.dir, 'sequoia.db');
      const store = `sqlite:${db}`;
      const clock = ctx.clock('A');
      const args = [
        '--store',
        store,
        '--workers',
        '1',
        '--state-dir',
        join(ctx.dir, 'state'),
        '--worker-lease-ttl-ms',
        '2000',
        '--clock-policy',
        'reject',
      ];
      if (provider === 'static') args.push('--worker-id-provider', 'static:9');
      const a = ctx.server({ name: 'A', clock, args });
      await a.start();
      const ops = [{ route: 'v1-snowflake' as const, key: 'twitter', count: 50 }];
      await ctx.load(1, 500, { servers: () => [a], ops, maxRequests: 100_000 });
      await a.stop();
      ctx.copySqlite(db, join(ctx.dir, 'snapshot.db'));
      // The old holder runs on with its clock ahead, reporting ticks the snapshot does not hold.
      clock.set(8000);
      await a.start();
      await a.confirmClock();
      await ctx.load(2, ctx.ms(3000, 8000), { servers: () => [a], ops, maxRequests: 1_000_000 });
      await a.kill();
      ctx.copySqlite(join(ctx.dir, 'snapshot.db'), db);
      // The next holder: lease store from the snapshot, the clock 8 s behind the last ticks handed out.
      clock.set(0);
      await sleep(2100);
      try {
        await a.start();
        ctx.notes.push('started on the restored lease store with the clock behind');
        await ctx.load(2, ctx.ms(4000, 10_000), { servers: () => [a], ops, maxRequests: 1_000_000 });
      } catch (e) {
        ctx.notes.push(
          `start refused on the restored lease store: ${(e instanceof Error ? e.message : String(e)).split('\n').slice(1, 3).join(' ').slice(0, 300)}`,
        );
      }
      return { keys: { 'snowflake:twitter': { layout: { ...TWITTER, nodes: provider === 'static' ? [9] : undefined } } } };
    },
  };
}

export const leaseSnapshotLease = leaseSnapshot('lease', true);
export const leaseSnapshotStatic = leaseSnapshot('static', false);
