/**
 * Strict tags under coalescing (issue 27): three servers (two `--workers 2`,
 * one single process) on one private store behind the TCP fault proxy, and
 * only a strict tag, asked for by many concurrent connections at once (single
 * IDs on both routes and batches of 3 and 17), so each process sends large
 * batches of requests as one store write. Meanwhile the store is slowed,
 * stalled, cut, has an answer dropped after it committed, is restarted
 * cleanly and after a crash, and servers and single cluster workers are
 * SIGKILLed, SIGTERMed and paused. Every answer must increase across all
 * servers (an answer that ended before another request began holds only
 * smaller IDs), no batch may be short, no ID may repeat.
 */
import { join } from 'node:path';
import { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { processFaults } from '../harness/faults.js';
import { sleep } from '../harness/rng.js';
import { type PrivateStore, PrivatePostgres, PrivateRedis } from '../harness/stores.js';

type Kind = 'postgres' | 'redis';

function strictCoalesce(kind: Kind): Scenario {
  return {
    name: `strict-coalesce-${kind}`,
    short: false,
    about: `strict tag only, ${kind} behind the fault proxy, 3 servers (workers 2, 2, 1), 48 concurrent clients: store faults and process kills while requests are coalesced`,
    async run(ctx: Context): Promise<CheckSpec> {
      const dir = join(ctx.dir, kind);
      const db: PrivateStore = ctx.store(kind === 'postgres' ? new PrivatePostgres(dir) : new PrivateRedis(dir));
      await db.start();
      const proxy = await ctx.proxy('127.0.0.1', db.port);
      const store = FaultProxy.rewrite(db.url, proxy.port);
      const strict = `coalesce-${ctx.id}`;
      await ctx.createTag(store, strict, 1);
      // Redis holds no leases: static worker ids, one process each (a static id cannot be shared by two workers).
      const shape = kind === 'redis' ? [1, 1, 1] : [2, 2, 1];
      const servers = shape.map((w, i) =>
        ctx.server({
          name: `S${i}`,
          args: ['--store', store, '--state-dir', join(ctx.dir, `state${i}`), '--workers', String(w), '--strict-tags', strict, ...(kind === 'redis' ? ['--worker-id-provider', `static:${3 + i}`] : [])],
        }),
      );
      for (const s of servers) await s.start();
      const ms = ctx.ms(10_000, 45_000);
      const until = Date.now() + ms;
      const hardStop = Date.now() + 3 * ms;
      let storeFaultsDone = false;
      const storeFaults = async () => {
        const done: string[] = [];
        const kinds = ['slow', 'stall', 'cut', 'drop-answer', 'restart', 'crash'] as const;
        const order = [...kinds].sort(() => ctx.rng.next() - 0.5);
        for (let i = 0; (i < order.length && Date.now() < hardStop) || Date.now() < until - 2500; i++) {
          await sleep(ctx.rng.int(400, 1200));
          const f = order[i] ?? ctx.rng.pick(kinds);
          done.push(f);
          switch (f) {
            case 'slow':
              proxy.slow(ctx.rng.int(5, 200));
              await sleep(ctx.rng.int(500, 1500));
              break;
            case 'stall':
              proxy.stall();
              await sleep(ctx.rng.int(300, 2500));
              break;
            case 'cut':
              proxy.cut();
              await sleep(ctx.rng.int(200, 1500));
              break;
            case 'drop-answer':
              proxy.stall('down');
              await sleep(ctx.rng.int(50, 300));
              proxy.cut();
              await sleep(ctx.rng.int(100, 500));
              break;
            case 'restart':
              await db.restart(false);
              break;
            case 'crash':
              await db.restart(true);
              break;
          }
          proxy.restore();
        }
        ctx.notes.push(`store faults: ${done.join(', ')}`);
        storeFaultsDone = true;
      };
      const ops = [
        { route: 'leaf-segment' as const, key: strict },
        { route: 'v1-segment' as const, key: strict, count: 1 },
        { route: 'v1-segment' as const, key: strict, count: 3 },
        { route: 'v1-segment' as const, key: strict, count: 17 },
      ];
      await Promise.all([
        ctx.load(48, 3 * ms, { servers: () => servers.filter((s) => s.running && !s.stopped), ops, maxRequests: 100_000, sockets: 1, stop: () => storeFaultsDone }),
        storeFaults(),
        processFaults(ctx, servers, until, kind === 'redis' ? ['kill', 'term', 'pause'] : ['kill', 'term', 'pause', 'kill-worker', 'pause-worker']),
      ]);
      return { keys: { [`segment:${strict}`]: { min: 1n, order: 'global' } } };
    },
  };
}

export const strictCoalescePostgres = strictCoalesce('postgres');
export const strictCoalesceRedis = strictCoalesce('redis');
