/**
 * One server, one rollback guard (real processes, the real SQLite store):
 * `serve --workers 2` with the traffic deliberately skewed to ONE worker (one
 * keep-alive connection), the SQLite files copied before and restored after,
 * a restart with the same state directory: every worker and every route
 * refuses STORE_ROLLBACK_DETECTED and no ID is handed out twice. Then a fence
 * made elsewhere (the CLI, or HTTP on one worker) reopens every worker of the
 * running server within seconds, without a restart.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) killAll(s);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function get(url: string, agent?: Agent, method = 'GET', body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent: agent ?? false,
        // Without an agent: a fresh connection per request, so cluster round-robin spreads them over the workers.
        headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(agent ? {} : { connection: 'close' }) },
        timeout: 10_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

function logLines(s: ServerProcess, msg: string): Record<string, unknown>[] {
  return s
    .output()
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function workerPids(s: ServerProcess): number[] {
  return (logLines(s, 'listening')[0]?.workerPids as number[] | undefined) ?? [];
}

/** SIGKILL the primary and its workers: a crash of the whole server. */
function killAll(s: ServerProcess): void {
  for (const pid of [s.child.pid, ...workerPids(s)]) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

const SQLITE_FILES = ['', '-wal', '-shm'];

function copySqlite(from: string, to: string): void {
  for (const suffix of SQLITE_FILES) {
    rmSync(to + suffix, { force: true });
    if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
  }
}

/**
 * Run 1 (both workers load ranges), SIGTERM, a copy of the SQLite files;
 * run 2 with 10,000 IDs over one keep-alive connection (one worker), SIGKILL;
 * the copy restored. Answers the IDs handed out so far and the paths.
 */
async function restoredAfterSkewedTraffic(tag: string, extra: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-guard-'));
  const dbFile = join(dir, 'ids.db');
  const store = `sqlite:${dbFile}`;
  const stateDir = join(dir, 'state');
  const args = ['--workers', '2', '--store', store, '--state-dir', stateDir, '--log-level', 'info', ...extra];
  expect(sequoia(['tag', 'create', tag, '--step', '100', '--store', store, '--state-dir', stateDir]).status).toBe(0);
  const seen: string[] = [];

  const first = await startServe(args);
  running.push(first);
  for (let i = 0; i < 8; i++) {
    const r = await get(`${first.url}/api/segment/get/${tag}`); // fresh connections: both workers load
    expect(r.status).toBe(200);
    seen.push(r.body);
  }
  first.child.kill('SIGTERM');
  expect(await first.exited).toBe(0);
  copySqlite(dbFile, join(dir, 'backup.db'));

  const second = await startServe(args);
  running.push(second);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 100; i++) {
    const r = await get(`${second.url}/v1/segment/${tag}?count=100`, agent);
    expect(r.status).toBe(200);
    seen.push(...(JSON.parse(r.body) as { ids: string[] }).ids);
  }
  agent.destroy();
  // Skewed indeed: one worker loaded every range of this run (strict tags load no ranges).
  const loaders = new Set(logLines(second, 'segment loaded').map((l) => l.pid));
  expect(loaders.size).toBe(extra.includes('--strict-tags') ? 0 : 1);
  killAll(second);
  await second.exited;
  copySqlite(join(dir, 'backup.db'), dbFile);
  return { dir, store, stateDir, args, seen };
}

/** Fresh connections alternate over the workers (cluster round-robin); both routes. */
async function askEveryWorker(url: string, tag: string, n: number): Promise<Array<{ status: number; body: string }>> {
  const out: Array<{ status: number; body: string }> = [];
  for (let i = 0; i < n; i++) out.push(await get(i % 2 ? `${url}/v1/segment/${tag}?count=5` : `${url}/api/segment/get/${tag}`));
  return out;
}

/** After a fence: asks until 6 answers in a row are 200 (a refused worker re-reads the fence epoch at most once a second), 8 s at most. */
async function untilEveryWorkerServes(url: string, tag: string): Promise<Array<{ status: number; body: string }>> {
  const t0 = Date.now();
  let after: Array<{ status: number; body: string }> = [];
  while (Date.now() - t0 < 8000) {
    after = await askEveryWorker(url, tag, 6);
    if (after.every((a) => a.status === 200)) break;
    await sleep(200);
  }
  expect(after.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
  return after;
}

function idsOf(answers: Array<{ status: number; body: string }>): string[] {
  return answers.flatMap((a) =>
    a.status !== 200 ? [] : a.body.startsWith('{') ? (JSON.parse(a.body) as { ids: string[] }).ids : [a.body],
  );
}

describe('the rollback guard covers the whole server (--workers 2, SQLite)', () => {
  it('after a restore, every worker and every route refuses until a CLI fence, which reopens the running server', async () => {
    const tag = `guard-${Math.random().toString(36).slice(2, 8)}`;
    const { store, stateDir, args, seen } = await restoredAfterSkewedTraffic(tag);
    expect(new Set(seen).size).toBe(seen.length);

    const third = await startServe(args);
    running.push(third);
    const answers = await askEveryWorker(third.url, tag, 20);
    const repeats = idsOf(answers).filter((id) => seen.includes(id));
    expect(repeats).toEqual([]);
    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(a.body).toContain('STORE_ROLLBACK_DETECTED');
    }
    // both workers refused on their own (each logged the refusal)
    const refusing = new Set(
      third
        .output()
        .split('\n')
        .filter((l) => l.includes('"code":"STORE_ROLLBACK_DETECTED"'))
        .map((l) => (JSON.parse(l) as { pid: number }).pid),
    );
    expect(refusing).toEqual(new Set(workerPids(third)));

    // A fence from the CLI (not through this server) reopens both workers within a few seconds.
    const top = seen.map(BigInt).reduce((a, b) => (a > b ? a : b));
    const fenced = sequoia(['fence', tag, '--to', String(top + 1_000_000n), '--store', store, '--state-dir', stateDir]);
    expect(fenced.stderr).toBe('');
    expect(fenced.status).toBe(0);
    const after = await untilEveryWorkerServes(third.url, tag);
    const fresh = [...idsOf(answers), ...idsOf(after)];
    for (const id of fresh) expect(BigInt(id)).toBeGreaterThan(top);
    const all = [...seen, ...fresh];
    expect(new Set(all).size).toBe(all.length);
    killAll(third);
  }, 90_000);

  it('an HTTP fence answered by one worker reopens the other worker too', async () => {
    const tag = `guard-${Math.random().toString(36).slice(2, 8)}`;
    const { args, seen } = await restoredAfterSkewedTraffic(tag);
    const third = await startServe(args);
    running.push(third);
    const refused = await askEveryWorker(third.url, tag, 4);
    expect(refused.map((a) => a.status)).toEqual([503, 503, 503, 503]);

    const top = seen.map(BigInt).reduce((a, b) => (a > b ? a : b));
    const f = await get(`${third.url}/v1/tags/${tag}/fence`, undefined, 'POST', JSON.stringify({ to: String(top + 1_000_000n) }));
    expect(f.status).toBe(200);
    const after = await untilEveryWorkerServes(third.url, tag);
    const all = [...seen, ...idsOf(after)];
    expect(new Set(all).size).toBe(all.length);
    killAll(third);
  }, 90_000);
  it('strict tags too: after a restore both workers refuse, a CLI fence reopens them', async () => {
    const tag = `strict-${Math.random().toString(36).slice(2, 8)}`;
    const { store, stateDir, args, seen } = await restoredAfterSkewedTraffic(tag, ['--strict-tags', tag]);
    const third = await startServe(args);
    running.push(third);
    const answers = await askEveryWorker(third.url, tag, 6);
    expect(idsOf(answers).filter((id) => seen.includes(id))).toEqual([]);
    expect(answers.map((a) => a.status)).toEqual([503, 503, 503, 503, 503, 503]);
    for (const a of answers) expect(a.body).toContain('STORE_ROLLBACK_DETECTED');
    const top = seen.map(BigInt).reduce((a, b) => (a > b ? a : b));
    expect(sequoia(['fence', tag, '--to', String(top + 1_000_000n), '--store', store, '--state-dir', stateDir]).status).toBe(0);
    const after = await untilEveryWorkerServes(third.url, tag);
    const all = [...seen, ...idsOf(answers), ...idsOf(after)];
    expect(new Set(all).size).toBe(all.length);
    killAll(third);
  }, 90_000);
});
