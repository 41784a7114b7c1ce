/**
 * What operators do to the files under a server (issue 28 items 2 and 4):
 *
 * - `state-dir-full`: the state dir and the SQLite store on a 4 MiB tmpfs
 *   (mounted here: root). Small steps keep segment loads (store transactions
 *   and high-water marks) going while clients take segment and snowflake IDs;
 *   then a file fills the disk: the server refuses what needs a write, is
 *   SIGKILLed and restarted on the full disk (the start must work), and serves
 *   again once the file is deleted, without a restart.
 * - `db-lock`: another process holds a write lock (`BEGIN IMMEDIATE`) on the
 *   state dir's `state.db`, then on the store file, for seconds at a time,
 *   while clients load a `--workers 2` server and a probe measures /healthz:
 *   it must keep answering (within 2.5 s on a loaded machine; the event loop
 *   never waits on a lock), and a SIGKILL while a lock is held loses nothing.
 *
 * Both check every ID for repeats and order; errors are the truth told.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { CheckSpec } from '../checker.js';
import { type Context, type Scenario, TWITTER } from '../harness/context.js';
import { sleep } from '../harness/rng.js';
import type { ServerProcess } from '../harness/server.js';

/** Writes a file until the filesystem is full. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as { code?: string }).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
}

function answersWithIds(recs: ReadonlyArray<{ records: ReadonlyArray<{ ids?: readonly string[] | undefined }> }>): number {
  return recs.flatMap((r) => r.records).filter((r) => r.ids !== undefined).length;
}

function errorsOf(recs: ReadonlyArray<{ records: ReadonlyArray<{ error?: string | undefined }> }>): string {
  const m: Record<string, number> = {};
  for (const r of recs.flatMap((x) => x.records)) if (r.error) m[r.error] = (m[r.error] ?? 0) + 1;
  return JSON.stringify(m);
}

export const stateDirFull: Scenario = {
  name: 'state-dir-full',
  short: true,
  about:
    'state dir and SQLite store on a 4 MiB tmpfs, step 10: many loads, then the disk filled by another file, a SIGKILL and a restart on the full disk, the file deleted',
  async run(ctx: Context): Promise<CheckSpec> {
    const disk = join(ctx.dir, 'disk');
    mkdirSync(disk);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk], { encoding: 'utf8' });
    if (m.status !== 0) throw new Error(`cannot mount a 4 MiB tmpfs (needs root): ${m.stderr}`);
    ctx.onCleanup(() => {
      spawnSync('umount', ['-l', disk]);
    });
    const store = `sqlite:${join(disk, 'sequoia.db')}`;
    const tag = `full-${ctx.id}`;
    await ctx.createTag(store, tag, 10);
    const server = ctx.server({
      name: 'A',
      args: ['--store', store, '--state-dir', join(disk, 'state'), '--max-step', '20', '--load-timeout-ms', '1000'],
    });
    await server.start();
    const all = () => (server.running ? [server] : []);
    const ops = [
      { route: 'v1-segment' as const, key: tag, count: 7 },
      { route: 'leaf-segment' as const, key: tag },
      { route: 'v1-snowflake' as const, key: 'twitter', count: 5 },
    ];
    const before = await ctx.load(2, ctx.ms(3000, 20_000), { servers: all, ops, maxRequests: 100_000, prefix: 'room' });
    const errorsBefore = errorsOf(before);
    ctx.notes.push(`with room: ${answersWithIds(before)} answers with IDs, errors ${errorsBefore}`);
    if (errorsBefore !== '{}') throw new Error(`the server refused while its disk had room: ${errorsBefore}`);

    const filler = join(disk, 'filler');
    fill(filler);
    const full = await ctx.load(2, ctx.ms(2000, 8000), { servers: all, ops, maxRequests: 100_000, prefix: 'full' });
    ctx.notes.push(`disk full: ${answersWithIds(full)} answers with IDs, errors ${errorsOf(full)}`);
    await server.kill();
    await server.start(); // throws if the start on the full disk fails
    ctx.notes.push('restarted on the full disk after a SIGKILL');
    const restarted = await ctx.load(2, ctx.ms(1500, 5000), { servers: all, ops, maxRequests: 100_000, prefix: 'full-restarted' });
    ctx.notes.push(`full, restarted: ${answersWithIds(restarted)} answers with IDs, errors ${errorsOf(restarted)}`);

    rmSync(filler);
    await sleep(1000);
    const freed = await ctx.load(2, ctx.ms(3000, 15_000), { servers: all, ops, maxRequests: 100_000, prefix: 'freed' });
    const segmentAnswers = freed.flatMap((r) => r.records).filter((r) => r.ids !== undefined && r.generator === 'segment').length;
    ctx.notes.push(`space back: ${answersWithIds(freed)} answers with IDs (${segmentAnswers} segment), errors ${errorsOf(freed)}`);
    if (segmentAnswers === 0) throw new Error('the server did not serve segment IDs again once the disk had room');
    return { keys: { [`segment:${tag}`]: { min: 1n }, 'snowflake:twitter': { layout: TWITTER } } };
  },
};

/** Another process holding a write lock on a SQLite file until `release`. */
function holdLock(path: string): { release: () => Promise<void> } {
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const script = `const D = require(${JSON.stringify(sqlite)}); const db = new D(process.argv[1], { timeout: 10000 }); db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n'); process.stdin.resume(); process.stdin.on('end', () => { db.exec('ROLLBACK'); process.exit(0); });`;
  const child: ChildProcess = spawn(process.execPath, ['-e', script, path], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const locked = new Promise<void>((resolve) => child.stdout?.on('data', () => resolve()));
  return {
    release: async () => {
      await Promise.race([locked, exited]);
      child.stdin?.end();
      await Promise.race([exited, sleep(3000)]);
      child.kill('SIGKILL');
    },
  };
}

/** /healthz once every 50 ms until `stop`; answers the worst latency and how many probes went unanswered. */
async function probeHealth(server: ServerProcess, stop: () => boolean): Promise<{ worst: number; missed: number; probes: number }> {
  let worst = 0;
  let missed = 0;
  let probes = 0;
  while (!stop()) {
    if (server.url === '' || !server.running) {
      await sleep(50);
      continue;
    }
    const t0 = performance.now();
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(`${server.url}/healthz`, { agent: false, timeout: 5000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
    probes++;
    if (ok) worst = Math.max(worst, performance.now() - t0);
    else missed++;
    await sleep(50);
  }
  return { worst, missed, probes };
}

export const dbLock: Scenario = {
  name: 'db-lock',
  short: true,
  about:
    'SQLite, --workers 2, step 50: another process holds a write lock on state.db, then on the store file, for seconds at a time; /healthz must keep answering; a SIGKILL and a restart while locked',
  async run(ctx: Context): Promise<CheckSpec> {
    const dbFile = join(ctx.dir, 'sequoia.db');
    const store = `sqlite:${dbFile}`;
    const stateDir = join(ctx.dir, 'state');
    const tags = [`lock-a-${ctx.id}`, `lock-b-${ctx.id}`];
    for (const t of tags) await ctx.createTag(store, t, 50);
    const server = ctx.server({
      name: 'A',
      args: ['--store', store, '--state-dir', stateDir, '--workers', '2', '--load-timeout-ms', '1500'],
    });
    await server.start();
    const all = () => (server.running ? [server] : []);
    const ops = [
      ...tags.flatMap((t) => [
        { route: 'v1-segment' as const, key: t, count: 9 },
        { route: 'leaf-segment' as const, key: t },
      ]),
      { route: 'v1-snowflake' as const, key: 'twitter', count: 3 },
    ];
    let done = false;
    const health = probeHealth(server, () => done);
    const load = ctx.load(3, ctx.ms(9000, 60_000), { servers: all, ops, maxRequests: 1_000_000, sockets: 2, pauseMs: 2 });
    const until = Date.now() + ctx.ms(7000, 55_000);
    let round = 0;
    while (Date.now() < until) {
      const file = round % 2 === 0 ? join(stateDir, 'state.db') : dbFile;
      const lock = holdLock(file);
      const heldMs = ctx.long ? ctx.rng.int(1000, 3000) : ctx.rng.int(800, 1500);
      await sleep(heldMs);
      if (round === 2) {
        // A crash while another process holds the lock, restarted while it still holds it (the start
        // waits for it up to the busy timeout): the restarted server must not repeat.
        await server.kill();
        const restart = server.start();
        await sleep(1000);
        await lock.release();
        await restart;
        ctx.notes.push(`SIGKILL, and a restart begun while ${file.endsWith('state.db') ? 'state.db' : 'the store'} was locked`);
      }
      await lock.release();
      ctx.notes.push(`round ${round}: ${file.endsWith('state.db') ? 'state.db' : 'the store file'} locked for ${heldMs} ms`);
      if (!server.running) await server.start();
      await sleep(ctx.rng.int(200, 600));
      round++;
    }
    const recs = await load;
    done = true;
    const h = await health;
    ctx.notes.push(
      `${answersWithIds(recs)} answers with IDs, errors ${errorsOf(recs)}; /healthz: ${h.probes} probes, worst ${Math.round(h.worst)} ms, ${h.missed} unanswered (across a restart)`,
    );
    // Before the fix: frozen for the busy timeout (2-5 s) at every lock. The bound leaves room for a loaded machine.
    if (h.worst > 2500) throw new Error(`/healthz took ${Math.round(h.worst)} ms while a database lock was held: the event loop waited`);
    return { keys: { ...Object.fromEntries(tags.map((t) => [`segment:${t}`, { min: 1n }])), 'snowflake:twitter': { layout: TWITTER } } };
  },
};
