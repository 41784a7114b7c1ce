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
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { CheckSpec, LedgerVerdict } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { sleep } from '../harness/rng.js';
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
    const ms = ctx.ms(10_000, 45_000);
    const until = Date.now() + ms;
    const hardStop = Date.now() + 4 * ms;
    let faultsDone = false;
    const ops = [
      { route: 'v1-snowflake' as const, key: 'twitter', count: 200 },
      { route: 'v1-snowflake' as const, key: 'twitter', count: 37 },
    ];
    const faults = async () => {
      const done: string[] = [];
      const kinds = ['stall', 'cut', 'restart', 'crash', 'pause-worker', 'kill', 'kill-worker'] as const;
      const order = [...kinds].sort(() => ctx.rng.next() - 0.5);
      for (let i = 0; (i < order.length && Date.now() < hardStop) || Date.now() < until - 2500; i++) {
        await sleep(ctx.rng.int(300, 900));
        const f = order[i] ?? ctx.rng.pick(kinds);
        done.push(f);
        switch (f) {
          case 'stall':
            // Past the lease: every holder must stop before its id can pass on.
            proxy.stall();
            await sleep(ctx.rng.int(TTL_MS, 3 * TTL_MS));
            break;
          case 'cut':
            proxy.cut();
            await sleep(ctx.rng.int(200, 2000));
            break;
          case 'restart':
            await redis.restart(false);
            break;
          case 'crash':
            await redis.restart(true);
            break;
          case 'pause-worker': {
            const s = ctx.rng.pick(servers.filter((x, i) => x.running && shape[i] === 2));
            if (!s) break;
            const pid = s.signalWorker((p) => (p.length === 0 ? undefined : ctx.rng.pick(p)), 'SIGSTOP');
            await sleep(ctx.rng.int(2 * TTL_MS, 4 * TTL_MS));
            if (pid !== undefined) s.signalWorker((p) => (p.includes(pid) ? pid : undefined), 'SIGCONT');
            break;
          }
          case 'kill': {
            // The single-process server: a `--workers 2` one started again on a loaded machine may miss the
            // harness's 30 s start bound (strict-coalesce.ts); their workers are killed instead.
            const s = ctx.rng.pick(servers.filter((_, i) => shape[i] === 1));
            await s.kill();
            await sleep(ctx.rng.int(50, 500));
            await s.start();
            break;
          }
          case 'kill-worker':
            ctx.rng
              .pick(servers.filter((_, i) => shape[i] === 2))
              .signalWorker((p) => (p.length === 0 ? undefined : ctx.rng.pick(p)), 'SIGKILL');
            break;
        }
        proxy.restore();
      }
      ctx.notes.push(`faults: ${done.join(', ')}`);
      faultsDone = true;
    };
    await Promise.all([
      ctx.load(4, 5 * ms, {
        servers: () => servers.filter((s) => s.running),
        ops,
        maxRequests: 1_000_000,
        sockets: 1,
        stop: () => faultsDone,
      }),
      faults(),
    ]);
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
  const stateDir = join(ctx.dir, 'audit-state');
  mkdirSync(stateDir, { recursive: true });
  const r = await ctx.sequoia(
    ['audit', file, '--layout', 'twitter', '--store', store, '--state-dir', stateDir, '--json', '--no-progress'],
    true,
  );
  if (r.status !== 0 && r.status !== 1) throw new Error(`sequoia audit --layout exited ${r.status}: ${r.stderr.slice(0, 500)}`);
  const report = JSON.parse(r.stdout) as AuditJson;
  if (report.notChecked.length > 0) throw new Error(`sequoia audit --layout: not checked: ${report.notChecked.join('; ')}`);
  const unheld = report.findings.find((f) => f.kind === 'unheld-worker-id');
  ctx.notes.push(`lease ledger: ${ids.size} IDs checked, ${unheld?.count ?? 0} with a worker id nobody held at their tick`);
  return { checked: ids.size, uncovered: unheld?.count ?? 0, examples: unheld?.examples.slice(0, 20) ?? [] };
}
