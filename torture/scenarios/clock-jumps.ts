/**
 * The clock of a real server process moved under it (libfaketime reads an
 * offset file the scenario rewrites): backwards and forwards by 1 ms to 1 h
 * while clients take snowflake IDs, then the server stopped, its clock
 * stepped back, and started again. One scenario per (clock policy, worker-id
 * provider). Whatever the policy does (wait, refuse, borrow ticks, switch to
 * the backup worker), no ID may come twice; a refused start is an honest
 * answer, recorded as a note.
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { sleep } from '../harness/rng.js';

export type Policy = 'reject' | 'wait' | 'logical' | 'backup-worker';
export type Provider = 'lease' | 'static' | 'k8s-ordinal' | 'zookeeper';

/** Relative steps of the clock, ms: small and large, back and forth. */
const STEPS = [-1, -10, 1000, -500, -5000, 3_600_000, -3_600_000, -3, -60_000];

export function clockJumps(policy: Policy, provider: Provider, short: boolean): Scenario {
  return {
    name: `clock-${policy}-${provider}`,
    short,
    about: `snowflake under libfaketime, clock policy ${policy}, worker ids from ${provider}: jumps of 1 ms to 1 h, a step back across a restart`,
    async run(ctx: Context): Promise<CheckSpec> {
      const store = `sqlite:${join(ctx.dir, 'sequoia.db')}`;
      const spec =
        provider === 'lease'
          ? 'lease'
          : provider === 'static'
            ? 'static:5'
            : provider === 'k8s-ordinal'
              ? 'k8s-ordinal'
              : `zookeeper:127.0.0.1:2181/sequoia-torture-${ctx.id}`;
      const clock = ctx.clock('A');
      const server = ctx.server({
        name: 'A',
        clock,
        hostname: provider === 'k8s-ordinal' ? 'sequoia-6' : undefined,
        args: [
          '--store',
          store,
          '--state-dir',
          join(ctx.dir, 'state'),
          '--workers',
          '1',
          '--worker-id-provider',
          spec,
          '--clock-policy',
          policy,
          '--clock-max-wait-ms',
          '200',
          '--worker-lease-ttl-ms',
          '3000',
        ],
      });
      try {
        await server.start();
      } catch (e) {
        const m = e instanceof Error ? e.message : String(e);
        // A fixed id has no spare to switch to: backup-worker with static / k8s-ordinal is a configuration error, said at start.
        if (policy === 'backup-worker' && /exited \(2\)[\s\S]*INVALID_ARGUMENT/.test(m)) {
          return { refused: `start refused with exit status 2 and INVALID_ARGUMENT: ${m.split('\n').slice(1, 2).join(' ').slice(0, 300)}` };
        }
        throw e;
      }
      const ops = [
        { route: 'v1-snowflake' as const, key: 'twitter', count: 20 },
        { route: 'leaf-snowflake' as const, key: 'twitter' },
      ];
      let stop = false;
      const load = ctx.load(2, 10 * 60_000, {
        servers: () => (server.running ? [server] : []),
        ops,
        maxRequests: 1_000_000,
        sockets: 1,
        stop: () => stop,
      });
      try {
        const rounds = ctx.long ? 2 : 1;
        for (let r = 0; r < rounds; r++) {
          for (const step of STEPS) {
            clock.set(clock.offsetMs + step);
            // The process re-reads the offset at most once a second.
            await sleep(ctx.rng.int(1100, 1800));
            // The first large offset is checked on the server itself: a clock that never moved tests nothing.
            if (!clock.confirmed && Math.abs(clock.offsetMs) >= 60_000 && server.running) await server.confirmClock();
          }
        }
        // Stepped back across a restart: the recorded last tick must keep the new run apart, or the start is refused.
        await server.stop();
        clock.set(clock.offsetMs - ctx.rng.int(2000, 20_000));
        try {
          await server.start();
          ctx.notes.push(`restart with the clock ${-clock.offsetMs} ms behind: started`);
          await sleep(ctx.ms(2500, 8000));
        } catch (e) {
          ctx.notes.push(
            `restart with the clock ${-clock.offsetMs} ms behind: start refused (${(e instanceof Error ? e.message : String(e)).split('\n').slice(1, 3).join(' ').slice(0, 300)})`,
          );
        }
      } finally {
        stop = true;
        await load;
      }
      // backup-worker switches to another worker id: an ID from it may be smaller than one before.
      // A fixed id is the only node field these IDs may carry.
      const nodes = provider === 'static' ? [5] : provider === 'k8s-ordinal' ? [6] : undefined;
      return { keys: { 'snowflake:twitter': { layout: { ...TWITTER, nodes }, order: policy === 'backup-worker' ? 'none' : 'process' } } };
    },
  };
}

const POLICIES: readonly Policy[] = ['reject', 'wait', 'logical', 'backup-worker'];
const PROVIDERS: readonly Provider[] = ['static', 'k8s-ordinal', 'zookeeper', 'lease'];

/** Every policy × provider; the short set runs the diagonal (each policy and each provider once). */
export const CLOCK_SCENARIOS: readonly Scenario[] = POLICIES.flatMap((p, i) => PROVIDERS.map((v, j) => clockJumps(p, v, i === j)));
