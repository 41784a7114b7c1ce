/**
 * Five servers of mixed kinds (one process or `--workers 2`; worker ids by
 * lease, and in the mixed variant one by worker-node rows) on one PostgreSQL store, a plain and a strict
 * tag, the client SDK given every server's URL and failing over while servers
 * are killed, stopped and paused, plus plain HTTP clients on the strict tag,
 * whose answers must increase across all servers.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { processFaults } from '../harness/faults.js';
import { dropSharedTable, SHARED } from '../harness/stores.js';
import { Recorder } from '../record.js';

interface SdkClient {
  nextBatch(tag: string, n: number): Promise<bigint[]>;
  next(tag: string): Promise<bigint>;
  snowflake(): Promise<bigint>;
  close(): Promise<void>;
}

const now = (): number => performance.timeOrigin + performance.now();

async function sdkLoop(ctx: Context, name: string, urls: readonly string[], tags: readonly string[], until: number): Promise<void> {
  const { createClient } = (await import(join(ctx.dist, 'client', 'index.js'))) as { createClient: (o: object) => SdkClient };
  const client = createClient({ urls, batch: { initial: 20, min: 10, max: 200 }, timeoutMs: 2000 });
  const rec = new Recorder(ctx.logDir, name);
  try {
    for (let i = 0; Date.now() < until && i < 200_000; i++) {
      const tag = ctx.rng.pick(tags);
      const kind = ctx.rng.int(0, 9);
      const start = now();
      const base = {
        server: 'sdk',
        route: kind === 0 ? 'sdk-snowflake' : 'sdk-segment',
        generator: kind === 0 ? ('snowflake' as const) : ('segment' as const),
        key: kind === 0 ? 'twitter' : tag,
      };
      const asked = kind < 5 ? 1 : ctx.rng.int(2, 60);
      try {
        const ids = kind === 0 ? [await client.snowflake()] : asked === 1 ? [await client.next(tag)] : await client.nextBatch(tag, asked);
        rec.record({ ...base, start, end: now(), asked, ids: ids.map(String) });
      } catch (e) {
        rec.record({ ...base, start, end: now(), asked, error: (e as { code?: string }).code ?? 'CLIENT_ERROR' });
      }
    }
  } finally {
    await client.close();
  }
}

function manyServersScenario(name: string, providers: readonly string[], short: boolean): Scenario {
  return {
    name,
    short,
    about: `PostgreSQL, 5 servers (workers 1 and 2; worker ids by ${[...new Set(providers)].join(' and ')}), plain and strict tags, client SDK failing over while servers die`,
    async run(ctx: Context): Promise<CheckSpec> {
      const store = SHARED.postgres(`torture_${ctx.id}`);
      ctx.onCleanup(() => dropSharedTable('postgres', `torture_${ctx.id}`));
      const plain = `many-${ctx.id}`;
      const strict = `many-strict-${ctx.id}`;
      await ctx.createTag(store, plain, 50);
      await ctx.createTag(store, strict, 50);
      const servers = [1, 2, 1, 2, 1].map((w, i) =>
        ctx.server({
          name: `S${i}`,
          args: [
            '--store',
            store,
            '--state-dir',
            join(ctx.dir, `state${i}`),
            '--workers',
            String(w),
            '--worker-id-provider',
            providers[i] ?? 'lease',
            '--strict-tags',
            strict,
          ],
        }),
      );
      for (const s of servers) await s.start();
      const ms = ctx.ms(12_000, 60_000);
      const until = Date.now() + ms;
      const urls = servers.map((s) => s.url);
      await Promise.all([
        sdkLoop(ctx, 'sdk0', urls, [plain, strict], until),
        sdkLoop(ctx, 'sdk1', [...urls].reverse(), [plain, strict], until),
        ctx.load(2, ms, {
          servers: () => servers.filter((s) => s.running && !s.stopped),
          ops: [
            { route: 'v1-segment', key: strict, count: 4 },
            { route: 'leaf-segment', key: strict },
            { route: 'v1-segment', key: plain, count: 10 },
            { route: 'v1-snowflake', key: 'twitter', count: 20 },
          ],
          maxRequests: 100_000,
          sockets: 2,
        }),
        processFaults(ctx, servers, until, ['kill', 'term', 'pause', 'kill-worker']),
      ]);
      return {
        keys: {
          [`segment:${plain}`]: { min: 1n },
          [`segment:${strict}`]: { min: 1n, order: 'global' },
          'snowflake:twitter': { layout: TWITTER },
        },
      };
    },
  };
}

export const manyServers = manyServersScenario('many-servers-sdk', ['lease', 'lease', 'lease', 'lease', 'lease'], true);
/** worker-node rows and leases on one store: two id sources side by side. */
export const manyServersMixed = manyServersScenario(
  'many-servers-mixed-providers',
  ['lease', 'lease', 'worker-node', 'lease', 'lease'],
  false,
);
