/**
 * Worker ids leased from etcd (`--worker-id-provider etcd://…`, 5 s leases):
 * three servers with `--workers 2` on a private etcd behind the fault proxy,
 * which is stalled (sometimes past the lease), cut, restarted and crashed,
 * while servers are paused past their lease (another server, restarted
 * meanwhile, takes the paused one's ids), killed and restarted, and single
 * workers are paused. No ID may come twice, and every ID's worker id must be
 * held at its tick in the lease ledger etcd keeps (checked by `sequoia audit`).
 */
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { leaseLedgerVerdict } from '../harness/ledger.js';
import { killAndStart, loadUnderFaults, pauseWorker, storeFault } from '../harness/faults.js';
import { sleep } from '../harness/rng.js';
import { PrivateEtcd } from '../harness/stores.js';

const TTL_MS = 5000;

export const etcdLeases: Scenario = {
  name: 'etcd-leases',
  short: false,
  about:
    'snowflake, worker ids from etcd (5 s leases), 3 servers × 2 workers: etcd stalled, cut, restarted, crashed; servers paused past their lease and killed; every ID checked against the lease ledger',
  async run(ctx: Context): Promise<CheckSpec> {
    const etcd = ctx.store(new PrivateEtcd(join(ctx.dir, 'etcd')));
    await etcd.start();
    const proxy = await ctx.proxy('127.0.0.1', etcd.port);
    const prefix = `/sequoia-torture/${ctx.id}`;
    const spec = (port: number) => `etcd://127.0.0.1:${port}${prefix}`;
    const servers = [0, 1, 2].map((i) =>
      ctx.server({
        name: `S${i}`,
        args: [
          '--store',
          `sqlite:${join(ctx.dir, `s${i}.db`)}`,
          '--state-dir',
          join(ctx.dir, `state${i}`),
          '--workers',
          '2',
          '--worker-id-provider',
          spec(proxy.port),
          '--worker-lease-ttl-ms',
          String(TTL_MS),
        ],
      }),
    );
    for (const s of servers) await s.start();
    await loadUnderFaults(ctx, {
      label: 'faults',
      ms: ctx.ms(15_000, 120_000),
      kinds: ['stall', 'stall-past-lease', 'cut', 'restart', 'crash', 'pause-past-lease', 'kill', 'pause-worker'],
      gap: [300, 900],
      proxy,
      apply: async (f) => {
        switch (f) {
          case 'stall-past-lease':
            // Every holder's renewals stop: each must stop issuing before its lease could run out.
            return storeFault(ctx, proxy, etcd, 'stall', { stall: [TTL_MS + 500, 3 * TTL_MS] });
          case 'pause-past-lease': {
            // A holder frozen past its lease while another server, restarted meanwhile, takes the expired ids.
            const [a, b] = [...servers].sort(() => ctx.rng.next() - 0.5) as [(typeof servers)[0], (typeof servers)[0]];
            if (!a.running || !b.running) return;
            a.signal('SIGSTOP');
            await sleep(TTL_MS + 2500);
            await b.kill();
            await b.start();
            await sleep(ctx.rng.int(500, 1500));
            a.signal('SIGCONT');
            return;
          }
          case 'kill':
            return killAndStart(ctx, ctx.rng.pick(servers));
          case 'pause-worker':
            return pauseWorker(ctx, ctx.rng.pick(servers), [TTL_MS, 3 * TTL_MS]);
          default:
            return storeFault(ctx, proxy, etcd, f, { stall: [300, TTL_MS] });
        }
      },
      clients: 4,
      load: {
        ops: [
          { route: 'v1-snowflake', key: 'twitter', count: 50 },
          { route: 'leaf-snowflake', key: 'twitter' },
        ],
        maxRequests: 1_000_000,
        sockets: 2,
      },
      servers,
    });
    ctx.notes.push(await holdingsNote(`http://127.0.0.1:${etcd.port}`, prefix));
    return {
      keys: { 'snowflake:twitter': { layout: TWITTER } },
      // Straight to etcd: the proxy's faults are over.
      ledger: { 'snowflake:twitter': await leaseLedgerVerdict(ctx, spec(etcd.port), 'twitter') },
    };
  },
};

/** How the ids changed hands, from the ledger keys (one per holding): a run with no takeover proved little. */
async function holdingsNote(host: string, prefix: string): Promise<string> {
  const c = new Etcd3({ hosts: host });
  try {
    const values = Object.values(await c.getAll().prefix(`${prefix}/ledger/`).strings());
    const began = values.map((v) => JSON.parse(v) as { began?: string; released?: boolean });
    const n = (f: (b: { began?: string; released?: boolean }) => boolean) => began.filter(f).length;
    return `lease ledger in etcd: ${began.length} holdings, ${n((b) => b.began === 'takeover')} began as takeovers of a lease that ran out, ${n((b) => b.released === true)} released`;
  } finally {
    c.close();
  }
}
