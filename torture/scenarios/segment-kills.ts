/**
 * Three servers on one SQLite file (one of them `--workers 2`), a small step
 * so segment loads happen all the time, and servers and single cluster
 * workers killed (SIGKILL, SIGTERM) and paused (SIGSTOP/SIGCONT) at random
 * moments: many land during a segment load. No ID may come twice; each
 * process's IDs of a tag increase; every ID lies in a range of the store's
 * range ledger (a range is never issued without its row).
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { processFaults } from '../harness/faults.js';
import { ledgerVerdicts } from '../harness/ledger.js';

export const segmentKills: Scenario = {
  name: 'segment-kills',
  short: true,
  about:
    'SQLite, 3 servers (one --workers 2), step 20: SIGKILL/SIGTERM/SIGSTOP of servers and single workers at random moments; every ID checked against the range ledger',
  async run(ctx: Context): Promise<CheckSpec> {
    const store = `sqlite:${join(ctx.dir, 'sequoia.db')}`;
    const tags = [`kill-a-${ctx.id}`, `kill-b-${ctx.id}`];
    for (const t of tags) await ctx.createTag(store, t, 20);
    const servers = [1, 1, 2].map((w, i) =>
      ctx.server({ name: `S${i}`, args: ['--store', store, '--state-dir', join(ctx.dir, `state${i}`), '--workers', String(w)] }),
    );
    for (const s of servers) await s.start();
    const ms = ctx.ms(10_000, 60_000);
    const until = Date.now() + ms;
    const ops = tags.flatMap((t) => [
      { route: 'v1-segment' as const, key: t, count: 13 },
      { route: 'leaf-segment' as const, key: t },
    ]);
    await Promise.all([
      ctx.load(4, ms, { servers: () => servers.filter((s) => s.running && !s.stopped), ops, maxRequests: 100_000, sockets: 2 }),
      processFaults(ctx, servers, until, ['kill', 'term', 'pause', 'kill-worker', 'pause-worker']),
    ]);
    return { keys: Object.fromEntries(tags.map((t) => [`segment:${t}`, { min: 1n }])), ledger: await ledgerVerdicts(ctx, store, tags) };
  },
};
