/**
 * Snowflake worker ids across real processes (the built `sequoia` binary):
 * concurrent starts never share an id (SQLite, PostgreSQL, MySQL); a static id
 * with a store is registered like a lease, so a second holder is refused; a
 * holder stopped (SIGSTOP) past its lease issues nothing on its old id when it
 * wakes (SIGCONT), while the new holder of that id starts after its last tick.
 * Redis holds leases as the SQL stores do: the same refusal and the same
 * concurrent starts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, assertBuilt, sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { REDIS_URL, probeRedis } from '../contract/backends.js';

const twitter = getLayout('twitter');
const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
const MYSQL_URL = 'mysql://root@127.0.0.1:3306/test';
const dirs: string[] = [];
const servers: ServerProcess[] = [];

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-sf-'));
  dirs.push(d);
  return d;
}

async function serve(args: string[]): Promise<ServerProcess> {
  // One state dir per server: a state dir belongs to one server and one store.
  const dir = args.includes('--state-dir') ? [] : ['--state-dir', join(tmp(), 'state')];
  const s = await startServe(['--workers', '1', '--log-level', 'info', ...dir, ...args]);
  servers.push(s);
  return s;
}

async function ids(s: ServerProcess, count = 1000): Promise<{ status: number; ids: string[]; code?: string }> {
  const r = await fetch(`${s.url}/v1/snowflake?count=${count}`);
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  return { status: r.status, ids: body.ids ?? [], code: body.error?.code };
}

const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);
const triple = (id: string) => {
  const d = decompose(twitter, BigInt(id));
  return `${d.tick}/${joinWorker(twitter, d.values)}/${d.values.sequence}`;
};

afterAll(async () => {
  for (const s of servers) {
    s.child.kill('SIGCONT');
    s.child.kill('SIGKILL');
  }
  await Promise.all(servers.map((s) => s.exited));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function concurrentStarts(store: string, n: number): Promise<void> {
  const started = await Promise.all(Array.from({ length: n }, (_, i) => serve(['--store', store, '--state-dir', join(tmp(), `s${i}`)])));
  const all = await Promise.all(started.map((s) => ids(s, 2000)));
  const workers = all.map((r) => {
    expect(r.status).toBe(200);
    const ws = new Set(r.ids.map(worker));
    expect(ws.size).toBe(1);
    return [...ws][0];
  });
  expect(new Set(workers).size).toBe(n);
  const flat = all.flatMap((r) => r.ids);
  expect(new Set(flat).size).toBe(flat.length);
  for (const s of started) {
    s.child.kill('SIGTERM');
    await s.exited;
  }
}

describe('snowflake across processes', () => {
  it('CLI: gen, explain, plan', () => {
    assertBuilt();
    const store = `sqlite:${join(tmp(), 'cli.db')}`;
    const g = sequoia(['gen', 'snowflake', '--count', '3', '--store', store]);
    expect(g.status).toBe(0);
    const out = g.stdout.trim().split('\n');
    expect(out).toHaveLength(3);
    const e = sequoia(['explain', out[0] as string, '--layout', 'twitter']);
    expect(JSON.parse(e.stdout)).toMatchObject({ layout: 'twitter', id: out[0] });
    const p = sequoia(['plan', '--nodes', '256', '--peak-per-ms', '1500', '--years', '30', '--json']);
    expect(JSON.parse(p.stdout)).toMatchObject({ nodeBits: 8, sequenceBits: 11, timeBits: 40, totalBits: 60 });
    expect(sequoia(['plan', '--nodes', '256', '--peak-per-ms', '1500', '--years', '30']).stdout).toMatch(/node bits\s+8/);
    expect(sequoia(['plan', '--nodes', '0', '--peak-per-ms', '1', '--years', '1']).status).toBe(2);
    expect(sequoia(['plan', '--nodes', 'x', '--peak-per-ms', '1', '--years', '1']).status).toBe(2);
    // One message per problem, all at once (before: only the first).
    const bad = sequoia(['plan', '--nodes', '-1', '--peak-per-ms', 'x', '--years', '0']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--nodes must be a positive number, got "-1"/);
    expect(bad.stderr).toMatch(/--peak-per-ms must be a positive number, got "x"/);
    expect(bad.stderr).toMatch(/--years must be a positive number, got "0"/);
    expect(sequoia(['gen', 'snowflake', '--layout', 'nope', '--store', store]).status).toBe(2);
  });

  it('SQLite: 4 servers started at once lease 4 different worker ids', async () => {
    await concurrentStarts(`sqlite:${join(tmp(), 'c.db')}`, 4);
  });

  it('static id with a store is registered like a lease: a second process is refused snowflake IDs (and says so at start)', async () => {
    const store = `sqlite:${join(tmp(), 's.db')}`;
    const a = await serve(['--store', store, '--worker-id-provider', 'static:7', '--worker-lease-ttl-ms', '1000']);
    expect((await ids(a, 3)).ids.map(worker)).toEqual([7, 7, 7]);
    const b = await serve(['--store', store, '--worker-id-provider', 'static:7', '--worker-lease-ttl-ms', '1000']);
    await expect.poll(() => b.output(), { timeout: 5000 }).toMatch(/"code":"LEASE_LOST".*held by.*snowflake IDs unavailable/);
    expect(await ids(b, 3)).toEqual({ status: 503, ids: [], code: 'LEASE_LOST' });
    expect((await ids(a, 3)).ids.map(worker)).toEqual([7, 7, 7]);
  });

  it('a holder paused past its lease (SIGSTOP) issues nothing on its old id when it wakes', async () => {
    const store = `sqlite:${join(tmp(), 'p.db')}`;
    const ttl = '1500';
    const a = await serve(['--store', store, '--worker-lease-ttl-ms', ttl]);
    const before = await ids(a, 500);
    expect(before.status).toBe(200);
    const wa = worker(before.ids[0] as string);
    a.child.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, 3000));
    const b = await serve(['--store', store, '--worker-lease-ttl-ms', ttl]);
    const fromB = await ids(b, 2000);
    expect(fromB.ids.map(worker)[0]).toBe(wa); // b took over a's expired id
    a.child.kill('SIGCONT');
    const afterA: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await ids(a, 500);
      if (r.status !== 200) expect(r.code).toBe('LEASE_LOST');
      afterA.push(...r.ids);
    }
    expect(afterA.filter((id) => worker(id) === wa)).toEqual([]);
    const all = [...before.ids, ...fromB.ids, ...afterA, ...(await ids(b, 1000)).ids];
    expect(new Set(all.map(triple)).size).toBe(all.length);
    // b started strictly after a's last tick.
    const lastA = Math.max(...before.ids.map((id) => decompose(twitter, BigInt(id)).tick));
    expect(Math.min(...fromB.ids.map((id) => decompose(twitter, BigInt(id)).tick))).toBeGreaterThan(lastA);
  });
});

const describePg = await describeWithService('PostgreSQL', async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});
describePg('snowflake leases on PostgreSQL', () => {
  it('3 servers started at once lease 3 different worker ids', async () => {
    await concurrentStarts(PG_URL, 3);
  });
});

const describeMysql = await describeWithService('MySQL', async () => {
  const c = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 2000 });
  await c.end();
});
describeMysql('snowflake leases on MySQL', () => {
  it('3 servers started at once lease 3 different worker ids', async () => {
    await concurrentStarts(MYSQL_URL, 3);
  });
});

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('snowflake leases on Redis', () => {
  const prefixes: string[] = [];
  /** A store URL whose every key (tags, ledger, leases) is this case's alone. */
  const redisStore = (): string => {
    const p = `sequoia-sf-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
    prefixes.push(p);
    return `${REDIS_URL}?keyPrefix=${p}:tag:&tagsKey=${p}:tags&ledgerPrefix=${p}:ledger:&leasePrefix=${p}:lease:`;
  };
  afterAll(async () => {
    const r = new Redis(REDIS_URL);
    for (const p of prefixes) {
      const keys = await r.keys(`${p}:*`);
      if (keys.length > 0) await r.del(...keys);
    }
    r.disconnect();
  });

  it('static id is registered like a lease: a second process is refused snowflake IDs (and says so at start)', async () => {
    const store = redisStore();
    const a = await serve(['--store', store, '--worker-id-provider', 'static:3', '--worker-lease-ttl-ms', '1000']);
    expect((await ids(a, 3)).ids.map(worker)).toEqual([3, 3, 3]);
    const b = await serve(['--store', store, '--worker-id-provider', 'static:3', '--worker-lease-ttl-ms', '1000']);
    await expect.poll(() => b.output(), { timeout: 5000 }).toMatch(/"code":"LEASE_LOST".*held by.*snowflake IDs unavailable/);
    expect(await ids(b, 3)).toEqual({ status: 503, ids: [], code: 'LEASE_LOST' });
    expect((await ids(a, 3)).ids.map(worker)).toEqual([3, 3, 3]);
  });

  it('3 servers started at once lease 3 different worker ids (lease is the default on Redis)', async () => {
    await concurrentStarts(redisStore(), 3);
  });
});
