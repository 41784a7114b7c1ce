/**
 * What a client reads of an error that names where it happened, on real
 * servers and stores: the answer says what failed, never a path, a host or a
 * ZooKeeper node; the server's log (or the error's `operatorDetail`) keeps
 * the where. One case per kind of message that used to be scrubbed by
 * pattern after the fact (server/public-message.ts): the rollback guard's
 * "kept in state dir", a fence below the state dir's mark, the SQLite
 * store's file, the Redis store's host, ZooKeeper's cache file.
 */
import { mkdtempSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisSegmentStore } from '../../src/adapters/redis/redis-segment-store.js';
import { ZookeeperWorkerIdProvider } from '../../src/adapters/zookeeper/zookeeper-worker-id-provider.js';
import { SequoiaError } from '../../src/core/errors.js';
import { answerText } from '../../src/server/public-message.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

async function serve(store: string, stateDir: string): Promise<ServerProcess> {
  const s = await startServe(['--store', store, '--state-dir', stateDir, '--max-step', '10']);
  running.push(s);
  return s;
}

async function stop(s: ServerProcess): Promise<void> {
  s.child.kill('SIGTERM');
  await s.exited;
}

/** Asks for 10 IDs of `t` until an answer is not 200 (at most `tries` times): that answer. */
async function firstRefusal(s: ServerProcess, tries = 50): Promise<{ status: number; body: string }> {
  for (let i = 0; i < tries; i++) {
    const r = await fetch(`${s.url}/v1/segment/t?count=10`);
    const body = await r.text();
    if (r.status !== 200) return { status: r.status, body };
  }
  throw new Error(`no refusal in ${tries} requests`);
}

/** The server's first log line of an error answer of `code`, once written (the log is written after the answer). */
async function logged(s: ServerProcess, code: string): Promise<Record<string, unknown>> {
  for (;;) {
    const line = s
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{') && l.endsWith('}'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.code === code);
    if (line) return line;
    await new Promise((r) => s.child.stdout?.once('data', r));
  }
}

function sqliteStore(prefix: string): { dir: string; file: string; store: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = join(dir, 'ids.db');
  const store = `sqlite:${file}`;
  expect(sequoia(['tag', 'create', 't', '--step', '10', '--store', store]).status).toBe(0);
  return { dir, file, store };
}

describe('a client reads what failed; the log reads where', () => {
  it('the rollback guard: a store answering below the mark, then the trip found again at start, never name the state dir', async () => {
    const { dir, file, store } = sqliteStore('sequoia-pub-rollback-');
    const state = join(dir, 'state');
    const a = await serve(store, state);
    expect((await fetch(`${a.url}/v1/segment/t?count=10`)).status).toBe(200);
    // The store restored from a snapshot taken before those IDs.
    const db = new Database(file);
    db.prepare("UPDATE sequoia_alloc SET max_id = 1 WHERE tag = 't'").run();
    db.close();
    const below = await firstRefusal(a);
    expect(below.status).toBe(503);
    expect(below.body).toMatch(/"code":"STORE_ROLLBACK_DETECTED".*below the high-water mark \d+: restored from/);
    expect(below.body).not.toContain(dir);
    expect(below.body).not.toContain('state dir');
    expect(await logged(a, 'STORE_ROLLBACK_DETECTED')).toMatchObject({ detail: `state dir ${state}` });
    await stop(a);

    const b = await serve(store, state);
    const earlier = await firstRefusal(b);
    expect(earlier.status).toBe(503);
    expect(earlier.body).toContain('a rollback was detected earlier (high-water mark ');
    expect(earlier.body).not.toContain(dir);
    const line = await logged(b, 'STORE_ROLLBACK_DETECTED');
    expect(line).toMatchObject({ detail: `state dir ${state}` });
    expect(String(line.err)).toContain(`kept in state dir ${state}`);
  }, 120_000);

  it('a fence below the mark the state dir keeps: 400 without the path; the log line has it', async () => {
    const { dir, store } = sqliteStore('sequoia-pub-fence-');
    const state = join(dir, 'state');
    const s = await serve(store, state);
    expect((await fetch(`${s.url}/v1/segment/t?count=3`)).status).toBe(200);
    const r = await fetch(`${s.url}/v1/tags/t/fence`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: '2' }),
    });
    const body = await r.text();
    expect(r.status).toBe(400);
    expect(body).toMatch(/"code":"INVALID_ARGUMENT".*to must be at least \d+: IDs up to \d+ were handed out \(high-water mark \d+\)"/);
    expect(body).not.toContain(dir);
    const line = await logged(s, 'INVALID_ARGUMENT');
    expect(line).toMatchObject({ detail: `state dir ${state}` });
    expect(String(line.err)).toContain(`in state dir ${state})`);
  }, 120_000);

  it("the SQLite store's file removed under the server: 503 without the file's path; the log line has it", async () => {
    const { dir, file, store } = sqliteStore('sequoia-pub-sqlite-');
    const s = await serve(store, join(dir, 'state'));
    expect((await fetch(`${s.url}/v1/segment/t?count=10`)).status).toBe(200);
    renameSync(file, join(dir, 'elsewhere.db'));
    const r = await fetch(`${s.url}/v1/tags/t`);
    const body = await r.text();
    expect(r.status).toBe(503);
    expect(body).toContain('"code":"STORE_UNAVAILABLE"');
    expect(body).toContain('the SQLite file was removed while this process had it open');
    expect(body).not.toContain(dir);
    expect(await logged(s, 'STORE_UNAVAILABLE')).toMatchObject({ detail: file });
  }, 120_000);
});

describe('stores that cannot be reached name their host to the operator only', () => {
  it('Redis: the host and port in the detail, not in the public message', async () => {
    const store = new RedisSegmentStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 500 });
    const e = await store.init().then(
      () => undefined,
      (err: unknown) => err,
    );
    await store.close();
    expect(e).toBeInstanceOf(SequoiaError);
    const err = e as SequoiaError;
    expect(err.message).toMatch(/^cannot reach Redis at 127\.0\.0\.1:1 \(ECONNREFUSED\)$/);
    expect(err.operatorDetail).toBe('127.0.0.1:1');
    expect(answerText(err, '')).toBe('cannot reach Redis (ECONNREFUSED)');
  });

  it('ZooKeeper unreachable at a first start: the cache file and the ensemble in the detail, not in the public message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-pub-zk-'));
    const provider = new ZookeeperWorkerIdProvider({ connect: '127.0.0.1:1', stateDir: dir, connectTimeoutMs: 300, port: 9 });
    const e = await provider.acquire({ key: 'pub', workerCount: 1024, unitMs: 1, label: 'pub' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await provider.close();
    expect(e).toBeInstanceOf(SequoiaError);
    const err = e as SequoiaError;
    expect(err.code).toBe('LEASE_LOST');
    expect(err.message).toContain(dir);
    expect(err.message).toContain('127.0.0.1:1');
    expect(err.operatorDetail).toContain(dir);
    const text = answerText(err, '');
    expect(text).toBe('ZooKeeper is unreachable and the cache file holds no worker id for this process; a first start needs ZooKeeper');
  }, 30_000);
});
