/**
 * Snowflake worker ids leased from a Redis store (the default `lease`
 * provider): three servers (`--workers 2`, 2, 1) on a private Redis behind the TCP
 * fault proxy, lease 1.5 s, four clients on their own connections. Redis is
 * stalled (longer than a lease, so holders must stop issuing before the ids
 * can pass on), cut, restarted and crashed; single workers are paused
 * (SIGSTOP) past their lease while the others take their ids, then resumed;
 * servers and workers are SIGKILLed. Every ID must be unique, and every ID's
 * worker id held at its tick by the lease ledger (`sequoia audit --layout`,
 * finding `unheld-worker-id`).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { CheckSpec, LedgerVerdict } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { killAndStart, killWorker, loadUnderFaults, pauseWorker, storeFault } from '../harness/faults.js';
import { PrivateRedis } from '../harness/stores.js';
import { readLog } from '../record.js';

const TTL_MS = 1500;

export const redisLeases: Scenario = {
  name: 'redis-leases',
  short: false,
  about: `snowflake, lease provider on a private Redis behind the fault proxy (ttl ${TTL_MS / 1000} s), three servers (workers 2, 2, 1): Redis stalled past the lease, cut, restarted, crashed; workers paused past their lease; servers and workers killed; every ID's worker id checked against the lease ledger`,
  async run(ctx: Context): Promise<CheckSpec> {
    const redis = ctx.store(new PrivateRedis(join(ctx.dir, 'redis')));
    await redis.start();
    const proxy = await ctx.proxy('127.0.0.1', redis.port);
    const store = FaultProxy.rewrite(redis.url, proxy.port);
    const shape = [2, 2, 1];
    const servers = shape.map((w, i) =>
      ctx.server({
        name: `S${i}`,
        args: [
          '--store',
          store,
          '--state-dir',
          join(ctx.dir, `state${i}`),
          '--workers',
          String(w),
          '--worker-lease-ttl-ms',
          String(TTL_MS),
        ],
      }),
    );
    for (const s of servers) await s.start();
    await loadUnderFaults(ctx, {
      label: 'faults',
      ms: ctx.ms(10_000, 45_000),
      kinds: ['stall', 'cut', 'restart', 'crash', 'pause-worker', 'kill', 'kill-worker'],
      gap: [300, 900],
      proxy,
      apply: async (f) => {
        switch (f) {
          case 'pause-worker': {
            const s = ctx.rng.pick(servers.filter((x, i) => x.running && shape[i] === 2));
            if (s) await pauseWorker(ctx, s, [2 * TTL_MS, 4 * TTL_MS]);
            return;
          }
          case 'kill':
            // The single-process server: a `--workers 2` one started again on a loaded machine may miss the
            // harness's 30 s start bound (strict-coalesce.ts); their workers are killed instead.
            return killAndStart(ctx, ctx.rng.pick(servers.filter((_, i) => shape[i] === 1)));
          case 'kill-worker':
            return killWorker(ctx, ctx.rng.pick(servers.filter((_, i) => shape[i] === 2)));
          default:
            // stall: past the lease, every holder must stop before its id can pass on.
            return storeFault(ctx, proxy, redis, f, { stall: [TTL_MS, 3 * TTL_MS] });
        }
      },
      clients: 4,
      load: {
        ops: [
          { route: 'v1-snowflake', key: 'twitter', count: 200 },
          { route: 'v1-snowflake', key: 'twitter', count: 37 },
        ],
        maxRequests: 1_000_000,
        sockets: 1,
      },
      servers,
    });
    // Straight to Redis: the proxy's faults are over.
    return { keys: { 'snowflake:twitter': { layout: TWITTER } }, ledger: { 'snowflake:twitter': await leaseVerdict(ctx, redis.url) } };
  },
};

/** The part of audit's JSON the verdict needs. */
interface AuditJson {
  readonly findings: ReadonlyArray<{ readonly kind: string; readonly count: number; readonly examples: readonly string[] }>;
  readonly notChecked: readonly string[];
}

/** Every snowflake ID the clients got, through `sequoia audit --layout twitter --store`, as an operator would ask. */
async function leaseVerdict(ctx: Context, store: string): Promise<LedgerVerdict> {
  const ids = new Set<string>();
  for (const r of readLog(ctx.logDir)) if (r.generator === 'snowflake') for (const id of r.ids ?? []) ids.add(id);
  const file = join(ctx.dir, 'lease-ids.txt');
  writeFileSync(file, [...ids].join('\n') + '\n');
  // No --state-dir: audit takes it with --tag only (the marks are per tag).
  const r = await ctx.sequoia(['audit', file, '--layout', 'twitter', '--store', store, '--json', '--no-progress'], true);
  if (r.status !== 0 && r.status !== 1) throw new Error(`sequoia audit --layout exited ${r.status}: ${r.stderr.slice(0, 500)}`);
  const report = JSON.parse(r.stdout) as AuditJson;
  if (report.notChecked.length > 0) throw new Error(`sequoia audit --layout: not checked: ${report.notChecked.join('; ')}`);
  const unheld = report.findings.find((f) => f.kind === 'unheld-worker-id');
  ctx.notes.push(`lease ledger: ${ids.size} IDs checked, ${unheld?.count ?? 0} with a worker id nobody held at their tick`);
  return { checked: ids.size, uncovered: unheld?.count ?? 0, examples: unheld?.examples.slice(0, 20) ?? [] };
}
