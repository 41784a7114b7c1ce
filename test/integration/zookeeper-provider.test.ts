/**
 * The zookeeper worker-id provider against a real ZooKeeper (.ci/zookeeper.sh
 * starts Debian's on 127.0.0.1:2181), with real `sequoia serve` processes:
 * cold starts together get distinct ids; a restart finds its own node (no
 * cache needed); a restart while ZooKeeper is down works from the cached file;
 * snowflake is refused (the server serves the rest) while the clock is behind the reported tick, from the node
 * and from the cached file; a silent node's id is reclaimed and its new holder
 * starts after the old tick. Each test runs under its own root.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zookeeper from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import type { ServerProcess } from '../helpers/cli.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { describeWithService } from '../helpers/services.js';
import { call, connectZk, getJson, serveWithProvider, ZK } from '../helpers/zookeeper.js';

const twitter = getLayout('twitter');
const SPACE = twitter.spaceKey;
const dirs: string[] = [];
const servers: ServerProcess[] = [];
const proxies: FaultProxy[] = [];
let zk: zookeeper.Client | undefined;

const getData = (path: string) => getJson(zk, path);
const setData = (path: string, data: object) => call<zookeeper.Stat>((cb) => zk?.setData(path, Buffer.from(JSON.stringify(data)), -1, cb));
const children = (path: string) => call<string[]>((cb) => zk?.getChildren(path, cb));

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-zk-'));
  dirs.push(d);
  return d;
}

const root = () => `/sequoia-test/${randomUUID().slice(0, 8)}`;

async function serve(provider: string, stateDir: string): Promise<ServerProcess> {
  const s = await serveWithProvider(provider, stateDir, ['--log-level', 'info']);
  servers.push(s);
  return s;
}

async function stop(s: ServerProcess): Promise<void> {
  s.child.kill('SIGTERM');
  await s.exited;
}

async function ids(s: ServerProcess, count = 1000): Promise<string[]> {
  const r = await fetch(`${s.url}/v1/snowflake?count=${count}`);
  const body = (await r.json()) as { ids?: string[]; error?: { code: string; message: string } };
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(body)}`);
  return body.ids ?? [];
}

/**
 * A worker id that cannot be had stops snowflake only: the server starts and
 * serves segment IDs, snowflake requests answer `code`, and the log says why.
 * Stopped at once: it asks the provider again in the background.
 */
async function serveWithoutSnowflake(provider: string, stateDir: string, code: string, reason: RegExp): Promise<void> {
  const s = await serve(provider, stateDir);
  try {
    const r = await fetch(`${s.url}/v1/snowflake?count=1`);
    const body = (await r.json()) as { error?: { code: string } };
    expect(r.status).toBe(503);
    expect(body.error?.code).toBe(code);
    expect(s.output()).toMatch(/snowflake IDs unavailable/);
    expect(s.output()).toMatch(reason);
  } finally {
    await stop(s);
  }
}

const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);
const tick = (id: string) => decompose(twitter, BigInt(id)).tick;
const cacheFile = (stateDir: string) => join(stateDir, 'zookeeper', `${SPACE}.json`);
const readCache = (stateDir: string) =>
  JSON.parse(readFileSync(cacheFile(stateDir), 'utf8')) as { path: string; workerId: number; tick: number };
const nowTick = () => Date.now() - twitter.epochMs;

afterAll(async () => {
  for (const s of servers) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  await Promise.all(proxies.map((p) => p.close()));
  zk?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const describeZk = await describeWithService('ZooKeeper', async () => {
  zk = await connectZk();
});

describeZk('zookeeper worker-id provider (real ZooKeeper, real processes)', () => {
  it('servers cold-starting together get distinct worker ids (sequential nodes)', async () => {
    const spec = `zookeeper:${ZK}${root()}`;
    const started = await Promise.all(Array.from({ length: 4 }, () => serve(spec, tmp())));
    const all = await Promise.all(started.map((s) => ids(s, 2000)));
    const workers = all.map((list) => {
      const ws = new Set(list.map(worker));
      expect(ws.size).toBe(1);
      return [...ws][0];
    });
    expect(new Set(workers).size).toBe(4);
    const flat = all.flat();
    expect(new Set(flat).size).toBe(flat.length);
    await Promise.all(started.map(stop));
  });

  it('a restart finds its own node and reuses its id, without the cache file', async () => {
    const r = root();
    const spec = `zookeeper:${ZK}${r}`;
    const dir = tmp();
    const a = await serve(spec, dir);
    const first = await ids(a, 500);
    await stop(a);
    const node = readCache(dir).path;
    expect(node.startsWith(`${r}/${SPACE}/forever/`)).toBe(true);
    expect((await getData(node)).data.tick).toBeGreaterThanOrEqual(Math.max(...first.map(tick)));
    rmSync(join(dir, 'zookeeper'), { recursive: true });
    const b = await serve(spec, dir);
    const second = await ids(b, 500);
    expect(new Set(second.map(worker))).toEqual(new Set([worker(first[0] as string)]));
    expect(Math.min(...second.map(tick))).toBeGreaterThan(Math.max(...first.map(tick)));
    await stop(b);
    expect(await children(`${r}/${SPACE}/forever`)).toHaveLength(1);
  });

  it('a restart while ZooKeeper is down works from the cached file; reports resume when it is back', async () => {
    const proxy = await FaultProxy.start('127.0.0.1', Number(ZK.split(':')[1]));
    proxies.push(proxy);
    const r = root();
    const spec = `zookeeper:127.0.0.1:${proxy.port}${r}?report-interval=500`;
    const dir = tmp();
    const a = await serve(spec, dir);
    const first = await ids(a, 500);
    await stop(a);
    proxy.cut();
    const b = await serve(spec, dir);
    expect(b.output()).toMatch(/zookeeper unreachable: starting from the cached worker id/);
    const second = await ids(b, 500);
    expect(new Set(second.map(worker))).toEqual(new Set([worker(first[0] as string)]));
    expect(Math.min(...second.map(tick))).toBeGreaterThan(Math.max(...first.map(tick)));
    // The tick reaches the cache file while ZooKeeper is down.
    await new Promise((res) => setTimeout(res, 1200));
    expect(readCache(dir).tick).toBeGreaterThanOrEqual(Math.max(...second.map(tick)));
    const node = readCache(dir).path;
    const before = (await getData(node)).data;
    proxy.restore();
    const back = Date.now();
    let after = before;
    for (let i = 0; i < 40 && !((after.atMs as number) >= back); i++) {
      await new Promise((res) => setTimeout(res, 250));
      after = (await getData(node)).data;
    }
    expect(after.atMs as number).toBeGreaterThanOrEqual(back);
    expect(after.tick as number).toBeGreaterThanOrEqual(Math.max(...second.map(tick)));
    // The node is written before the log line reaches our pipe: under load the line can trail it.
    for (let i = 0; i < 40 && !/zookeeper tick reports resumed/.test(b.output()); i++) {
      await new Promise((res) => setTimeout(res, 250));
    }
    expect(b.output()).toMatch(/zookeeper tick reports resumed/);
    // Its live node is taken at that report, so a second process with the name is refused from then on.
    expect(b.output()).toMatch(/zookeeper claim taken for the worker id started from the cache/);
    await stop(b);
  }, 40_000);

  it('snowflake is refused while the clock is behind the tick reported in the node, and in the cached file (the server serves the rest)', async () => {
    const proxy = await FaultProxy.start('127.0.0.1', Number(ZK.split(':')[1]));
    proxies.push(proxy);
    const r = root();
    const spec = `zookeeper:127.0.0.1:${proxy.port}${r}`;
    const dir = tmp();
    const a = await serve(spec, dir);
    await ids(a, 10);
    await stop(a);
    const cache = readCache(dir);
    // The node says this worker reported a tick an hour ahead of this clock.
    await setData(cache.path, { tick: nowTick() + 3_600_000 });
    await serveWithoutSnowflake(spec, dir, 'CLOCK_MOVED_BACKWARDS', /behind the tick reported in ZooKeeper node/);
    // ZooKeeper down: the cached file's tick is checked the same way (Leaf does not).
    await setData(cache.path, { tick: nowTick() - 1000 });
    proxy.cut();
    writeFileSync(cacheFile(dir), JSON.stringify({ ...cache, tick: nowTick() + 3_600_000 }));
    await serveWithoutSnowflake(spec, dir, 'CLOCK_MOVED_BACKWARDS', /behind the tick reported in the cached file/);
    // With a sane cache it starts (still without ZooKeeper).
    writeFileSync(cacheFile(dir), JSON.stringify({ ...cache, tick: nowTick() - 1000 }));
    const c = await serve(spec, dir);
    expect(new Set((await ids(c, 10)).map(worker))).toEqual(new Set([cache.workerId]));
    await stop(c);
  }, 40_000);

  it('a node silent past reclaim-after gives its id to a new node, which starts after its tick', async () => {
    const r = root();
    const forever = `${r}/${SPACE}/forever`;
    await call<string>((cb) => zk?.mkdirp(forever, cb));
    // Every id of the layout handed out (Leaf would refuse to start now).
    const t0 = nowTick();
    const deadTick = t0 + 5000; // a reservation 5 s ahead when it went silent
    const node = (i: number) => `${forever}/dead-host:8080@00000000-${String(i).padStart(10, '0')}`;
    for (let i = 0; i < 1024; i += 128) {
      await Promise.all(
        Array.from({ length: 128 }, (_, j) =>
          call<string>((cb) =>
            zk?.create(
              node(i + j),
              Buffer.from(JSON.stringify({ tick: i + j === 5 ? deadTick : t0 })),
              zookeeper.CreateMode.PERSISTENT,
              cb,
            ),
          ),
        ),
      );
    }
    const spec = `zookeeper:${ZK}${r}?reclaim-after=10&report-interval=500`;
    // Creating 1,024 nodes can take seconds on a loaded machine: refresh them
    // all, so "silent" is measured from here, with a wide margin (10 s).
    const refresh = (skip?: number) =>
      Promise.all(
        Array.from({ length: 1024 }, (_, i) => (i === skip ? undefined : setData(node(i), { tick: i === 5 ? deadTick : nowTick() }))),
      );
    await refresh();
    const silentSince = Date.now();
    // Nothing silent long enough yet: refused, and no id is taken.
    await serveWithoutSnowflake(spec, tmp(), 'ID_SPACE_EXHAUSTED', /snowflake IDs unavailable/);
    // Every node but #5 keeps reporting; #5 stays silent past 10 s.
    while (Date.now() - silentSince < 11_000) {
      await refresh(5);
      await new Promise((res) => setTimeout(res, 1500));
    }
    await refresh(5);
    const a = await serve(spec, tmp());
    const got = await ids(a, 1000);
    expect(new Set(got.map(worker))).toEqual(new Set([5]));
    expect(Math.min(...got.map(tick))).toBeGreaterThan(deadTick);
    expect(a.output()).toMatch(/zookeeper worker id reclaimed from a silent node/);
    // The lease the metrics show is reclaim-after long (what SequoiaWorkerLeaseExpiring compares the expiry with).
    const metrics = await (await fetch(`${a.url}/metrics`)).text();
    expect(metrics).toMatch(/^sequoia_worker_lease_ttl_seconds\{generator="[a-z]+"\} 10$/m);
    const left = Number(/^sequoia_worker_lease_expiry_seconds\{generator="[a-z]+"\} (\S+)$/m.exec(metrics)?.[1]);
    expect(left).toBeGreaterThan(5);
    expect(left).toBeLessThanOrEqual(10);
    const names = await children(forever);
    expect(names).toHaveLength(1024);
    expect(names.filter((n) => n.endsWith('-0000000005'))).toHaveLength(1);
    expect(names).not.toContain('dead-host:8080@00000000-0000000005');
    // Reports keep the reclaimed node fresh, so nobody else can take it (the others report again too).
    await Promise.all(Array.from({ length: 1024 }, (_, i) => (i === 5 ? undefined : setData(node(i), { tick: nowTick() }))));
    await new Promise((res) => setTimeout(res, 1500));
    await serveWithoutSnowflake(spec, tmp(), 'ID_SPACE_EXHAUSTED', /snowflake IDs unavailable/);
    await stop(a);
  }, 90_000);
});
