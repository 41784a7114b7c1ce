/**
 * Strict tags under coalescing (issue 27): three servers (two `--workers 2`,
 * one single process) on one private store behind the TCP fault proxy, and
 * only a strict tag, asked for by many concurrent connections at once (single
 * IDs on both routes and batches of 3 and 17), so each process sends large
 * batches of requests as one store write. Meanwhile the store is slowed,
 * stalled, cut, has an answer dropped after it committed, is restarted
 * cleanly and after a crash, and, taking turns with those, servers and single
 * cluster workers are SIGKILLed, SIGTERMed and paused. Every answer must increase across all
 * servers (an answer that ended before another request began holds only
 * smaller IDs), no batch may be short, no ID may repeat.
 */
import { join } from 'node:path';
import { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { isStoreFault, processFault, storeFault } from '../harness/faults.js';
import { sleep } from '../harness/rng.js';
import { type PrivateStore, PrivateMariadb, PrivatePostgres, PrivateRedis } from '../harness/stores.js';

type Kind = 'postgres' | 'mysql' | 'redis';

function strictCoalesce(kind: Kind): Scenario {
  return {
    name: `strict-coalesce-${kind}`,
    short: false,
    about: `strict tag only, ${kind} behind the fault proxy, 3 servers (workers 2, 2, 1), 48 concurrent clients: store faults and process kills, taking turns, while requests are coalesced`,
    async run(ctx: Context): Promise<CheckSpec> {
      const dir = join(ctx.dir, kind);
      const db: PrivateStore = ctx.store(
        kind === 'postgres' ? new PrivatePostgres(dir) : kind === 'mysql' ? new PrivateMariadb(dir) : new PrivateRedis(dir),
      );
      await db.start();
      const proxy = await ctx.proxy('127.0.0.1', db.port);
      const store = FaultProxy.rewrite(db.url, proxy.port);
      const strict = `coalesce-${ctx.id}`;
      await ctx.createTag(store, strict, 1);
      const shape = [2, 2, 1];
      const servers = shape.map((w, i) =>
        ctx.server({
          name: `S${i}`,
          args: ['--store', store, '--state-dir', join(ctx.dir, `state${i}`), '--workers', String(w), '--strict-tags', strict],
        }),
      );
      for (const s of servers) await s.start();
      const ms = ctx.ms(10_000, 45_000);
      const until = Date.now() + ms;
      const hardStop = Date.now() + 3 * ms;
      let faultsDone = false;
      // Store faults and process faults take turns (a server started again while the store is cut would
      // refuse to start, which is right but ends the scenario): each kind at least once, then random ones.
      const faults = async () => {
        const done: string[] = [];
        const storeKinds = ['slow', 'stall', 'cut', 'drop-answer', 'restart', 'crash'] as const;
        const processKinds = ['kill', 'term', 'pause', 'kill-worker', 'pause-worker'] as const;
        const all = [...storeKinds, ...processKinds];
        const order = [...all].sort(() => ctx.rng.next() - 0.5);
        for (let i = 0; (i < order.length && Date.now() < hardStop) || Date.now() < until - 2500; i++) {
          await sleep(ctx.rng.int(400, 1200));
          const f = order[i] ?? ctx.rng.pick(all);
          // Whole servers killed and started again are the single-process ones: a `--workers 2` server started
          // again on this loaded machine may miss the harness's 30 s start bound; its workers are killed instead.
          const whole = f === 'kill' || f === 'term';
          const s = ctx.rng.pick(whole ? servers.filter((_, i) => shape[i] === 1) : servers);
          done.push(f);
          if (isStoreFault(f)) await storeFault(ctx, proxy, db, f, { slow: [5, 200], stall: [300, 2500], cut: [200, 1500] });
          else await processFault(ctx, s, f);
          proxy.restore();
        }
        ctx.notes.push(`faults: ${done.join(', ')}`);
        faultsDone = true;
      };
      const ops = [
        { route: 'leaf-segment' as const, key: strict },
        { route: 'v1-segment' as const, key: strict, count: 1 },
        { route: 'v1-segment' as const, key: strict, count: 3 },
        { route: 'v1-segment' as const, key: strict, count: 17 },
      ];
      await Promise.all([
        ctx.load(48, 3 * ms, {
          servers: () => servers.filter((s) => s.running && !s.stopped),
          ops,
          maxRequests: 100_000,
          sockets: 1,
          stop: () => faultsDone,
        }),
        faults(),
      ]);
      return { keys: { [`segment:${strict}`]: { min: 1n, order: 'global' } } };
    },
  };
}

export const strictCoalescePostgres = strictCoalesce('postgres');
// MySQL's allocation is one multi-statement round trip: a cut or a crash can land between its statements.
export const strictCoalesceMysql = strictCoalesce('mysql');
export const strictCoalesceRedis = strictCoalesce('redis');
