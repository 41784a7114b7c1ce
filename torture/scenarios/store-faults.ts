/**
 * A real store behind the TCP fault proxy, with two servers (one
 * `--workers 2`) on it and a small step, so segment loads are constant: the
 * store is slowed, stalled, cut, has an answer dropped after it committed
 * (answers held, then the connection cut), is restarted cleanly and after a
 * crash (a private instance on its own port and data directory), and a
 * server is SIGKILLed while its loads crawl through a slowed store. The tag
 * list has a plain and a strict tag. At the end every ID the clients got is
 * checked against the store's range ledger (through `sequoia audit`).
 */
import { join } from 'node:path';
import { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { ledgerVerdicts } from '../harness/ledger.js';
import { loadUnderFaults, storeFault } from '../harness/faults.js';
import { sleep } from '../harness/rng.js';
import { type PrivateStore, PrivateMariadb, PrivatePostgres, PrivateRedis } from '../harness/stores.js';

type Kind = 'postgres' | 'mysql' | 'redis';

function storeFaults(kind: Kind): Scenario {
  return {
    name: `store-faults-${kind}`,
    short: true,
    about: `private ${kind} behind the fault proxy: slowed, stalled, cut, answer dropped after commit, restarted, crashed; a server killed mid-load; every ID checked against the range ledger`,
    async run(ctx: Context): Promise<CheckSpec> {
      const dir = join(ctx.dir, kind);
      const db: PrivateStore = ctx.store(
        kind === 'postgres' ? new PrivatePostgres(dir) : kind === 'mysql' ? new PrivateMariadb(dir) : new PrivateRedis(dir),
      );
      await db.start();
      const proxy = await ctx.proxy('127.0.0.1', db.port);
      const store = FaultProxy.rewrite(db.url, proxy.port);
      const plain = `faults-${ctx.id}`;
      const strict = `strict-${ctx.id}`;
      await ctx.createTag(store, plain, 20);
      await ctx.createTag(store, strict, 20);
      const servers = [1, 2].map((w, i) =>
        ctx.server({
          name: `S${i}`,
          args: [
            '--store',
            store,
            '--state-dir',
            join(ctx.dir, `state${i}`),
            '--workers',
            String(w),
            '--strict-tags',
            strict,
            '--load-timeout-ms',
            '1500',
          ],
        }),
      );
      for (const s of servers) await s.start();
      await loadUnderFaults(ctx, {
        label: 'store faults',
        ms: ctx.ms(8000, 60_000),
        kinds: ['slow', 'stall', 'cut', 'drop-answer', 'restart', 'crash', 'kill-during-load'],
        gap: [300, 900],
        proxy,
        apply: async (f) => {
          if (f !== 'kill-during-load') return storeFault(ctx, proxy, db, f, {});
          proxy.slow(300);
          await sleep(ctx.rng.int(100, 600));
          const s = ctx.rng.pick(servers);
          await s.kill();
          proxy.restore();
          await s.start();
        },
        clients: 4,
        load: {
          ops: [
            { route: 'v1-segment', key: plain, count: 9 },
            { route: 'leaf-segment', key: plain },
            { route: 'v1-segment', key: strict, count: 3 },
            { route: 'leaf-segment', key: strict },
          ],
          maxRequests: 200_000,
          sockets: 2,
        },
        servers,
      });
      return {
        keys: { [`segment:${plain}`]: { min: 1n }, [`segment:${strict}`]: { min: 1n, order: 'global' } },
        // Straight to the store: the proxy's faults are over.
        ledger: await ledgerVerdicts(ctx, db.url, [plain, strict]),
      };
    },
  };
}

export const storeFaultsPostgres = storeFaults('postgres');
export const storeFaultsMysql = storeFaults('mysql');
export const storeFaultsRedis = storeFaults('redis');
