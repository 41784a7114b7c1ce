/**
 * A lease holder paused (SIGSTOP) past its lease while another server takes
 * its worker id, then resumed: the paused server must stop issuing before its
 * lease could have expired (LEASE_LOST or no answer), never hand out IDs on
 * an id someone else now holds.
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { sleep } from '../harness/rng.js';

const TTL_MS = 1500;

export const leasePause: Scenario = {
  name: 'lease-pause',
  short: true,
  about: 'snowflake, lease on SQLite (ttl 1.5 s): holder SIGSTOPped past its lease, a second server takes the id, the holder resumes',
  async run(ctx: Context): Promise<CheckSpec> {
    const store = `sqlite:${join(ctx.dir, 'sequoia.db')}`;
    const common = ['--store', store, '--workers', '1', '--worker-lease-ttl-ms', String(TTL_MS)];
    const a = ctx.server({ name: 'A', args: [...common, '--state-dir', join(ctx.dir, 'stateA')] });
    await a.start();
    const ops = [{ route: 'v1-snowflake' as const, key: 'twitter', count: 100 }];
    const first = await ctx.load(1, 1000, { servers: () => [a], ops, maxRequests: 100_000, prefix: 'a' });
    const id = first[0]?.records.find((r) => r.ids?.length)?.ids?.[0];
    if (id === undefined) throw new Error('server A handed out no snowflake ID');
    const node = Number((BigInt(id) >> 12n) & 1023n);
    let stop = false;
    const onA = ctx.load(2, 120_000, { servers: () => [a], ops, maxRequests: 1_000_000, prefix: 'a', stop: () => stop });
    await sleep(500);
    a.signal('SIGSTOP');
    await sleep(3 * TTL_MS);
    const b = ctx.server({
      name: 'B',
      args: [...common, '--state-dir', join(ctx.dir, 'stateB'), '--worker-id-provider', `static:${node}`],
    });
    try {
      await b.start();
      ctx.notes.push(`B took worker id ${node} while A was paused`);
    } catch (e) {
      ctx.notes.push(
        `B could not take worker id ${node}: ${(e instanceof Error ? e.message : String(e)).split('\n').slice(1, 2).join(' ').slice(0, 200)}`,
      );
    }
    const onB = ctx.load(2, ctx.ms(4000, 15_000), { servers: () => (b.running ? [b] : []), ops, maxRequests: 1_000_000, prefix: 'b' });
    await sleep(1000);
    a.signal('SIGCONT');
    const afterResume = Date.now();
    await onB;
    stop = true;
    const recsA = (await onA).flatMap((r) => r.records).filter((r) => r.start >= afterResume);
    const nodesOf = (recs: readonly { ids?: readonly string[] | undefined }[]) =>
      [...new Set(recs.flatMap((r) => (r.ids ?? []).map((i) => Number((BigInt(i) >> 12n) & 1023n))))].sort((x, y) => x - y).join(', ') ||
      'none';
    ctx.notes.push(
      `worker ids in the IDs: A before the pause ${node}; B ${nodesOf((await onB).flatMap((r) => r.records))}; A after resuming ${nodesOf(recsA)}`,
    );
    ctx.notes.push(
      `A after resuming: ${recsA.filter((r) => r.ids).length} answers with IDs, errors ${JSON.stringify(recsA.filter((r) => r.error).reduce<Record<string, number>>((m, r) => ({ ...m, [r.error as string]: (m[r.error as string] ?? 0) + 1 }), {}))}`,
    );
    return { keys: { 'snowflake:twitter': { layout: TWITTER } } };
  },
};
