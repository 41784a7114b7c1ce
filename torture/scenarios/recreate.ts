/**
 * A tag deleted and created again under load, with shutdowns (issue 28,
 * item 1). Each round: servers A and B serve the tag; B is stopped (SIGTERM);
 * A is left idle holding its ranges; the tag is deleted and created again at
 * a start S above every ID handed out (the operator's safe choice) but below
 * the end of what A holds, chosen so that B, restarted and serving the new
 * tag, brings max_id to exactly the end of A's last range with fence epoch 0
 * (B is a new server, with a state directory of its own, each round).
 * That is where the old give-back (compare-and-set on max_id and fence epoch
 * only) matched the new tag: A's clean shutdown then handed A's unused tail
 * back into it, and A, restarted, handed out what B already had. Then A is
 * stopped (SIGTERM: the give-back), restarted, and both serve again; a
 * SIGKILL of a random server ends some rounds. No ID may come twice over all
 * rounds and generations; each process's IDs increase.
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import type { ServerProcess } from '../harness/server.js';
import { dropSharedTable, SHARED } from '../harness/stores.js';
import { readLog, type RequestRecord } from '../record.js';

const STEP = 100;

function highest(records: readonly RequestRecord[]): bigint {
  let m = 0n;
  for (const r of records) for (const id of r.ids ?? []) if (BigInt(id) > m) m = BigInt(id);
  return m;
}

/** The end of the last range a server holds for `tag` (from /v1/status), or undefined. */
async function heldEnd(server: ServerProcess, tag: string): Promise<bigint | undefined> {
  const r = await fetch(`${server.url}/v1/status`);
  const body = (await r.json()) as { tags?: { tag: string; current?: { end: string } | null; next?: { end: string } | null }[] };
  const t = body.tags?.find((x) => x.tag === tag);
  const end = t?.next?.end ?? t?.current?.end;
  return end === undefined ? undefined : BigInt(end);
}

/** The tag's max_id in the store, through the CLI (`tag list --json`), as an operator reads it. */
async function maxIdOf(ctx: Context, store: string, tag: string): Promise<bigint> {
  const r = await ctx.sequoia(['tag', 'list', '--json', '--store', store]);
  const row = (JSON.parse(r.stdout) as { tag: string; maxId: string }[]).find((t) => t.tag === tag);
  if (!row) throw new Error(`tag ${tag} is not listed`);
  return BigInt(row.maxId);
}

async function until(what: string, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const stop = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > stop) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function recreateScenario(name: string, kind: 'sqlite' | 'postgres', short: boolean): Scenario {
  return {
    name,
    short,
    about: `${kind}, step ${STEP}: a tag deleted and created again above every ID handed out, under load, with SIGTERM (give-back) and SIGKILL of the servers around it`,
    async run(ctx: Context): Promise<CheckSpec> {
      const store = kind === 'sqlite' ? `sqlite:${join(ctx.dir, 'sequoia.db')}` : SHARED.postgres(`torture_${ctx.id}`);
      if (kind === 'postgres') ctx.onCleanup(() => dropSharedTable('postgres', `torture_${ctx.id}`));
      const tag = `recreate-${ctx.id}`;
      await ctx.createTag(store, tag, STEP);
      // --max-step: every range is exactly the step, so the collision of max_id is exact.
      const serve = (n: string) =>
        ctx.server({ name: n, args: ['--store', store, '--state-dir', join(ctx.dir, `state-${n}`), '--max-step', String(STEP)] });
      const a = serve('A');
      // B is a new server (its own state directory) at every re-creation, as Q in the issue: its own
      // marks may lie above the new start (a range it held and could not give back), and then it
      // would rightly refuse the new tag as created again below what it handed out.
      let b = serve('B0');
      await a.start();
      await b.start();
      const ops = [
        { route: 'v1-segment' as const, key: tag, count: 7 },
        { route: 'leaf-segment' as const, key: tag },
      ];
      // Each round starts and stops servers five or six times: keep within the harness's 5 minutes on a busy machine.
      const rounds = ctx.long ? 4 : 2;
      let collided = 0;
      for (let round = 0; round < rounds; round++) {
        // Both serve.
        await ctx.load(3, ctx.ms(800, 2500), {
          servers: () => [a, b].filter((s) => s.running),
          ops,
          maxRequests: 3000,
          sockets: 2,
          prefix: `r${round}-both`,
        });
        await b.stop(30_000);
        // A alone for a moment, so its ranges are the last ones the store gave; then idle, and its prefetch settled.
        await ctx.load(1, 200, {
          servers: () => [a],
          ops: [{ route: 'v1-segment', key: tag, count: 15 }],
          maxRequests: 2,
          sockets: 1,
          prefix: `r${round}-a`,
        });
        let end: bigint | undefined;
        await until('A to settle', async () => {
          const e = await heldEnd(a, tag);
          const same = e !== undefined && e === end;
          end = e;
          return same;
        });
        const aEnd = end as bigint;
        const handedOut = highest(readLog(ctx.logDir));
        // S above every ID handed out, at aEnd - j * STEP: B's j ranges of the new tag end exactly at aEnd
        // (at most 2: B takes one range, or two with the prefetch). When B had taken ranges above A's,
        // A's are not the last: the new tag starts at the store's max_id, above everything.
        let j = aEnd > handedOut ? (aEnd - handedOut - 1n) / BigInt(STEP) : 0n;
        if (j > 2n) j = 2n;
        const start = aEnd > handedOut ? aEnd - j * BigInt(STEP) : await maxIdOf(ctx, store, tag);
        await ctx.sequoia(['tag', 'delete', tag, '--store', store]);
        await ctx.sequoia(['tag', 'create', tag, '--step', String(STEP), '--start', String(start), '--store', store]);
        b = serve(`B${round + 1}`);
        await b.start();
        if (j > 0n) {
          // B takes j ranges of the new tag: 10% of a step loads one; one more ID starts the prefetch of the second.
          const first = Math.floor(STEP / 10);
          await ctx.load(1, 2000, {
            servers: () => [b],
            ops: [{ route: 'v1-segment', key: tag, count: j === 1n ? first : first + 1 }],
            maxRequests: 1,
            sockets: 1,
            prefix: `r${round}-b`,
          });
          await until('B to take its ranges', async () => (await heldEnd(b, tag)) === aEnd);
          collided++;
        }
        // A's clean shutdown gives back its unused tail, then A comes back.
        await a.stop(30_000);
        await a.start();
        // A's first answer after the restart covers every ID from its old cursor past S + 10: had its tail
        // gone back into the new tag, it would now repeat what B handed out there.
        await ctx.load(1, 5000, {
          servers: () => [a],
          ops: [{ route: 'v1-segment', key: tag, count: 300 }],
          maxRequests: 1,
          sockets: 1,
          prefix: `r${round}-a-back`,
        });
        await ctx.load(3, ctx.ms(800, 2500), {
          servers: () => [a, b].filter((s) => s.running),
          ops,
          maxRequests: 3000,
          sockets: 2,
          prefix: `r${round}-after`,
        });
        if (ctx.rng.int(0, 3) === 0) {
          const victim = ctx.rng.int(0, 2) === 0 ? a : b;
          await victim.kill();
          await victim.start();
        }
        ctx.notes.push(
          `round ${round}: re-created at ${start} (highest ID handed out ${handedOut}, A held up to ${aEnd}; B's new ranges ended at A's: ${j > 0n ? 'yes' : 'no'})`,
        );
      }
      ctx.notes.push(`${collided} of ${rounds} rounds brought the new tag to A's (max_id, fence epoch) before A's give-back`);
      return { keys: { [`segment:${tag}`]: { min: 1n } } };
    },
  };
}

export const recreateSqlite = recreateScenario('recreate-sqlite', 'sqlite', false);
export const recreatePostgres = recreateScenario('recreate-postgres', 'postgres', false);
