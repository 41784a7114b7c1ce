/**
 * The store restored from an old snapshot while IDs above it were handed out:
 * every server that saw those IDs must refuse the tag (STORE_ROLLBACK_DETECTED)
 * until `sequoia fence`, made from the CLI while the servers run, raises the
 * store above everything handed out; then the tag reopens. Skewed: a
 * `--workers 2` server whose traffic after the snapshot went to ONE worker:
 * the other worker never saw the newer IDs, and only a server-wide guard
 * keeps it from handing them out again.
 *
 * SQLite: the file is copied while the server is stopped. PostgreSQL: a
 * private instance, `pg_dump` / `pg_restore --clean` while the server runs.
 */
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { sleep } from '../harness/rng.js';
import { PrivatePostgres } from '../harness/stores.js';
import { readLog, type RequestRecord } from '../record.js';

function maxId(records: readonly RequestRecord[]): bigint {
  let m = 0n;
  for (const r of records) for (const id of r.ids ?? []) if (BigInt(id) > m) m = BigInt(id);
  return m;
}

function restoreScenario(name: string, kind: 'sqlite' | 'postgres', workers: 1 | 2, short: boolean): Scenario {
  return {
    name,
    short,
    about: `${kind} store restored from a snapshot${workers === 2 ? ', traffic after the snapshot skewed to one worker of --workers 2' : ''}; fence from the CLI while serving`,
    async run(ctx: Context): Promise<CheckSpec> {
      let store: string;
      let pg: PrivatePostgres | undefined;
      const dbFile = join(ctx.dir, 'sequoia.db');
      if (kind === 'sqlite') store = `sqlite:${dbFile}`;
      else {
        pg = ctx.store(new PrivatePostgres(join(ctx.dir, 'pg')));
        await pg.start();
        store = pg.url;
      }
      const tag = `restore-${ctx.id}`;
      await ctx.createTag(store, tag, 100);
      const server = ctx.server({
        name: 'A',
        args: ['--store', store, '--state-dir', join(ctx.dir, 'state'), '--workers', String(workers)],
      });
      await server.start();
      const all = () => [server];
      const ops = [
        { route: 'v1-segment' as const, key: tag, count: 7 },
        { route: 'leaf-segment' as const, key: tag },
      ];
      // Phase 1: every worker takes part.
      await ctx.load(2, ctx.ms(1500, 4000), { servers: all, ops, maxRequests: 5000, sockets: 4, prefix: 'before' });
      const snap = join(ctx.dir, 'snapshot');
      if (kind === 'sqlite') {
        await server.stop();
        ctx.copySqlite(dbFile, snap);
        await server.start();
      } else (pg as PrivatePostgres).dump(snap);
      // Phase 2: one connection, so one worker, moves the tag past the snapshot.
      const skewed = await ctx.load(1, ctx.ms(1500, 4000), { servers: all, ops, maxRequests: 5000, sockets: 1, prefix: 'skewed' });
      const seen = maxId(skewed.flatMap((r) => r.records));
      if (kind === 'sqlite') {
        await server.stop();
        ctx.copySqlite(snap, dbFile);
        await server.start();
      } else (pg as PrivatePostgres).restore(snap);
      ctx.notes.push(`restored the ${kind} store to a snapshot taken below ${seen} (the highest ID handed out after it)`);
      // Phase 3: every worker again; the guard must refuse what the store now answers.
      const after = await ctx.load(3, ctx.ms(2500, 6000), { servers: all, ops, maxRequests: 5000, sockets: 4, prefix: 'restored' });
      const refused = after.flatMap((r) => r.records).filter((r) => r.error === 'STORE_ROLLBACK_DETECTED').length;
      ctx.notes.push(`after the restore: ${refused} answers STORE_ROLLBACK_DETECTED`);
      // The operator fences from the CLI while the server runs, to the highest ID in use plus a margin.
      // A fence below what this server's state directory knows it handed out is refused with the least
      // acceptable bound: take that, as an operator would.
      let fenceTo = maxId(readLog(ctx.logDir)) + 1000n;
      const fence = () =>
        ctx.sequoia(['fence', tag, '--to', String(fenceTo), '--store', store, '--state-dir', join(ctx.dir, 'state')], true);
      let f = await fence();
      const least = /to must be at least ([0-9]+)/.exec(f.stderr)?.[1];
      if (f.status === 2 && least !== undefined) {
        ctx.notes.push(`fence to ${fenceTo} refused: ${f.stderr.trim().split('\n')[0]}`);
        fenceTo = BigInt(least);
        f = await fence();
      }
      if (f.status !== 0) throw new Error(`sequoia fence exited ${f.status}: ${f.stderr}${f.stdout}`);
      ctx.notes.push(`fenced ${tag} to ${fenceTo} while serving`);
      await sleep(1500);
      const fenced = await ctx.load(2, ctx.ms(2000, 5000), { servers: all, ops, maxRequests: 5000, sockets: 4, prefix: 'fenced' });
      const served = fenced.flatMap((r) => r.records).filter((r) => r.ids !== undefined).length;
      ctx.notes.push(`after the fence: ${served} answers with IDs (the tag reopened without a restart: ${served > 0 ? 'yes' : 'NO'})`);
      // Reopening after a fence is a promise too (DESIGN: running servers reopen).
      if (served === 0) throw new Error('the tag stayed refused after `sequoia fence` while the server ran');
      return { keys: { [`segment:${tag}`]: { min: 1n } } };
    },
  };
}

export const restoreSqlite = restoreScenario('restore-sqlite', 'sqlite', 1, true);
export const restoreSqliteSkewed = restoreScenario('restore-sqlite-skewed', 'sqlite', 2, true);
export const restorePostgresSkewed = restoreScenario('restore-postgres-skewed', 'postgres', 2, false);
