/**
 * Planned restarts (issue 22, part 3): three servers on one SQLite file (the
 * last one `--workers 2`), SDK clients without a reserve given every URL, and
 * a rolling restart, twice: each one-process server in turn gets SIGTERM,
 * must exit 0, and is started again on its port before the next; the cluster
 * is renewed the way it can be without a gap, each worker in turn SIGTERMed
 * and replaced by the primary. (A whole cluster's start takes over the
 * harness's 30 s on a busy machine; a worker's replacement does not.) Every
 * SDK call must succeed (a failed call fails the scenario), and no ID may
 * come twice.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CheckSpec } from '../checker.js';
import type { Context, Scenario } from '../harness/context.js';
import { sleep } from '../harness/rng.js';
import type { ServerProcess } from '../harness/server.js';
import { Recorder } from '../record.js';

interface SdkClient {
  nextBatch(tag: string, n: number): Promise<bigint[]>;
  next(tag: string): Promise<bigint>;
  close(): Promise<void>;
}

const now = (): number => performance.timeOrigin + performance.now();

/** One SDK client until `done()`: single IDs and batches; returns its failed calls. */
async function sdkLoop(ctx: Context, name: string, urls: readonly string[], tag: string, done: () => boolean): Promise<string[]> {
  const { createClient } = (await import(join(ctx.dist, 'client', 'index.js'))) as { createClient: (o: object) => SdkClient };
  // No reserve: a call no server answered fails here instead of being served from it.
  const client = createClient({ urls, reserve: false, batch: { initial: 10, min: 1, max: 50, targetMs: 100 }, timeoutMs: 2000 });
  const rec = new Recorder(ctx.logDir, name);
  const failed: string[] = [];
  try {
    for (let i = 0; !done() && i < 500_000; i++) {
      const asked = ctx.rng.int(0, 1) === 0 ? 1 : ctx.rng.int(2, 60);
      const start = now();
      const base = { server: 'sdk', route: 'sdk-segment', generator: 'segment' as const, key: tag, asked };
      try {
        const ids = asked === 1 ? [await client.next(tag)] : await client.nextBatch(tag, asked);
        rec.record({ ...base, start, end: now(), ids: ids.map(String) });
      } catch (e) {
        const code = (e as { code?: string }).code ?? 'CLIENT_ERROR';
        rec.record({ ...base, start, end: now(), error: code });
        failed.push(`${name}: ${code} ${e instanceof Error ? e.message.slice(0, 200) : ''}`);
      }
      await sleep(10); // the harness shares the machine with the servers it restarts
    }
  } finally {
    await client.close();
  }
  return failed;
}

/** SIGTERM, a clean exit (0) within 30 s, and a start on the same port. */
async function restart(s: ServerProcess): Promise<void> {
  s.signal('SIGTERM');
  const code = await s.waitExit(30_000);
  if (code !== 0) throw new Error(`${s.name} did not drain and exit 0 on SIGTERM (${String(code)})`);
  await s.start();
}

/** Each worker of a cluster in turn: SIGTERM, and the primary's replacement ready before the next. */
async function replaceWorkers(s: ServerProcess): Promise<void> {
  for (const pid of s.workerPids()) {
    const replaced = s.output().split('"msg":"worker replaced"').length;
    process.kill(pid, 'SIGTERM');
    const until = Date.now() + 60_000;
    while (s.output().split('"msg":"worker replaced"').length === replaced) {
      if (Date.now() > until) throw new Error(`${s.name}: worker ${pid} was not replaced within 60 s`);
      await sleep(50);
    }
    if (/"msg":"worker exited; replacing it"[^\n]*"code":[1-9]/.test(s.output()))
      throw new Error(`${s.name}: a worker stopped with SIGTERM did not exit 0`);
  }
}

export const rollingRestart: Scenario = {
  name: 'rolling-restart',
  short: false,
  about:
    'SQLite, 3 servers (one --workers 2), 4 SDK clients without reserve: SIGTERM and restart each one-process server in turn, then replace each worker of the cluster in turn, twice; no call may fail',
  async run(ctx: Context): Promise<CheckSpec> {
    const store = `sqlite:${join(ctx.dir, 'sequoia.db')}`;
    const tag = `rolling-${ctx.id}`;
    await ctx.createTag(store, tag, 20);
    const servers = [1, 1, 2].map((w, i) =>
      ctx.server({
        name: `S${i}`,
        args: [
          '--store',
          store,
          '--state-dir',
          join(ctx.dir, `state${i}`),
          '--workers',
          String(w),
          '--max-step',
          '64',
          '--drain-delay-ms',
          '300',
        ],
      }),
    );
    for (const s of servers) await s.start();
    const urls = servers.map((s) => s.url);
    let finished = false;
    const clients = [0, 1, 2, 3].map((c) => sdkLoop(ctx, `sdk${c}`, [...urls.slice(c % 3), ...urls.slice(0, c % 3)], tag, () => finished));
    try {
      await sleep(1000);
      for (let round = 0; round < 2; round++) {
        for (const s of servers.slice(0, 2)) {
          await restart(s);
          await sleep(ctx.ms(300, 3000));
        }
        await replaceWorkers(servers[2]!);
        await sleep(ctx.ms(300, 3000));
      }
      await sleep(500);
    } finally {
      finished = true;
    }
    const failed = (await Promise.all(clients)).flat();
    if (failed.length > 0)
      throw new Error(`${failed.length} SDK calls failed during the rolling restarts: ${failed.slice(0, 5).join('; ')}`);
    return { keys: { [`segment:${tag}`]: { min: 1n } } };
  },
};
