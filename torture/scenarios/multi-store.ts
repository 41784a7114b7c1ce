/**
 * The multi-store set (store i of N hands out IDs ≡ i mod N): a private
 * Redis, and tables of their own on the shared PostgreSQL and MariaDB; the
 * Redis member is frozen (SIGSTOP) for seconds at a time while two servers
 * serve. Losing one member must cost no repeats (and, with buffers, little
 * availability).
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { sleep } from '../harness/rng.js';
import { dropSharedTable, PrivateRedis, SHARED } from '../harness/stores.js';

export const multiStoreFrozen: Scenario = {
  name: 'multi-store-frozen',
  short: true,
  about: 'multi-store set (private Redis + PostgreSQL + MariaDB), the Redis member frozen with SIGSTOP for seconds at a time',
  async run(ctx: Context): Promise<CheckSpec> {
    const redis = ctx.store(new PrivateRedis(join(ctx.dir, 'redis')));
    await redis.start();
    const store = [
      SHARED.postgres(`torture_${ctx.id}`),
      SHARED.mysql(`torture_${ctx.id}`),
      `${redis.url}/?keyPrefix=torture:${ctx.id}:`,
    ].join(',');
    ctx.onCleanup(() => dropSharedTable('postgres', `torture_${ctx.id}`));
    ctx.onCleanup(() => dropSharedTable('mysql', `torture_${ctx.id}`));
    const tag = `multi-${ctx.id}`;
    await ctx.createTag(store, tag, 30);
    const servers = [1, 2].map((w, i) =>
      ctx.server({
        name: `S${i}`,
        args: ['--store', store, '--state-dir', join(ctx.dir, `state${i}`), '--workers', String(w), '--load-timeout-ms', '1000'],
      }),
    );
    for (const s of servers) await s.start();
    const ms = ctx.ms(10_000, 45_000);
    const until = Date.now() + ms;
    const freezes = async () => {
      let n = 0;
      while (Date.now() < until - 3000) {
        await sleep(ctx.rng.int(500, 1500));
        redis.freeze();
        n++;
        await sleep(ctx.rng.int(1500, 4000));
        redis.thaw();
      }
      ctx.notes.push(`Redis member frozen ${n} times`);
    };
    await Promise.all([
      ctx.load(3, ms, {
        servers: () => servers,
        ops: [
          { route: 'v1-segment', key: tag, count: 11 },
          { route: 'leaf-segment', key: tag },
        ],
        maxRequests: 100_000,
        sockets: 2,
      }),
      freezes(),
    ]);
    // IDs come from whichever member answers: they are unique, not ordered.
    return { keys: { [`segment:${tag}`]: { min: 1n, order: 'none' } } };
  },
};
