/**
 * Issue 24: `zookeeper:…?leaf=NAME` beside Leaf-snowflake on one real
 * ZooKeeper (.ci/zookeeper.sh). Stand-ins of Leaf's SnowflakeZookeeperHolder
 * (test/helpers/leaf-snowflake-standin.ts) start and restart while Sequoia
 * servers start, are SIGKILLed and start again: no worker id is held by two
 * {ip}:{port}s; a restart keeps its id; Sequoia's node is Leaf's (name, JSON,
 * 3-second updates); a node timestamp ahead of the clock refuses the start.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type zookeeper from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { type ServerProcess, startServe } from '../helpers/cli.js';
import { type LeafHolder, startLeafHolder } from '../helpers/leaf-snowflake-standin.js';
import { describeWithService } from '../helpers/services.js';
import { call, connectZk, getJson, ZK } from '../helpers/zookeeper.js';

const servers: ServerProcess[] = [];
const holders: LeafHolder[] = [];
let zk: zookeeper.Client | undefined;

afterAll(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  for (const h of holders) h.stop();
  zk?.close();
});

const getData = (path: string) => getJson(zk, path);

async function serve(leafName: string, node: string, stateDir: string): Promise<ServerProcess> {
  const s = await startServe([
    '--workers',
    '1',
    '--log-level',
    'info',
    '--snowflake-layout',
    'leaf',
    '--store',
    `sqlite:${join(stateDir, 'x.db')}`,
    '--state-dir',
    stateDir,
    '--worker-id-provider',
    `zookeeper:${ZK}?leaf=${leafName}&node=${node}`,
  ]);
  servers.push(s);
  return s;
}

async function workerIdOf(s: ServerProcess): Promise<number> {
  // a loaded machine may still be taking the id when the server listens: ask again for a while
  for (let i = 0; ; i++) {
    const r = await fetch(`${s.url}/api/snowflake/get/x`);
    const id = await r.text();
    if (r.status === 200) return Number((BigInt(id) >> 12n) & 1023n);
    if (i >= 20 || r.status !== 503 || id.startsWith('CLOCK_MOVED_BACKWARDS')) throw new Error(`${r.status} ${id}\n${s.output()}`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

async function holder(leafName: string, ip: string): Promise<LeafHolder> {
  const h = await startLeafHolder(ZK, leafName, ip, '8080');
  holders.push(h);
  return h;
}

const describeZk = await describeWithService('ZooKeeper', async () => {
  zk = await connectZk();
});

describeZk('ZooKeeper leaf mode beside Leaf-snowflake', () => {
  it('Leaf stand-ins and Sequoia servers, started together and restarted, never share a worker id', async () => {
    const leafName = `sequoia_test_${randomUUID().slice(0, 8)}`;
    // A deployed Leaf has its tree already (Leaf's own first start leaves workerID 0 for every
    // holder that finds no /forever at once: a Leaf race, not what is tested here).
    await call<string>((cb) => zk?.mkdirp(`/snowflake/${leafName}/forever`, cb));
    const dirs = [mkdtempSync(join(tmpdir(), 'sequoia-zkleaf-')), mkdtempSync(join(tmpdir(), 'sequoia-zkleaf-'))];
    const nodes = ['127.0.0.1:9001', '127.0.0.1:9002'];
    // every {ip}:{port} with the worker ids it was given
    const held = new Map<string, Set<number>>();
    const note = (who: string, id: number) => held.set(who, (held.get(who) ?? new Set()).add(id));

    const starting = Promise.all([
      serve(leafName, nodes[0] as string, dirs[0] as string),
      serve(leafName, nodes[1] as string, dirs[1] as string),
    ]);
    const leaves = await Promise.all(['10.9.0.1', '10.9.0.2', '10.9.0.3'].map((ip) => holder(leafName, ip)));
    leaves.forEach((h, i) => note(`10.9.0.${i + 1}:8080`, h.workerId));
    const seq = await starting;
    for (const [i, s] of seq.entries()) note(nodes[i] as string, await workerIdOf(s));

    // Sequoia's node is Leaf's: name, JSON (port a string), updated every 3 s
    const children = await call<string[]>((cb) => zk?.getChildren(`/snowflake/${leafName}/forever`, cb));
    const mine = children.find((c) => c.startsWith('127.0.0.1:9001-')) as string;
    expect(mine).toMatch(/^127\.0\.0\.1:9001-\d{10}$/);
    expect(Number(mine.split('-')[1])).toBe([...(held.get('127.0.0.1:9001') as Set<number>)][0]);
    const before = await getData(`/snowflake/${leafName}/forever/${mine}`);
    expect(Object.keys(before.data)).toEqual(['ip', 'port', 'timestamp']);
    expect(before.data).toMatchObject({ ip: '127.0.0.1', port: '9001', timestamp: expect.any(Number) });
    // reports every 3 s: wait for one (a loaded machine may be late)
    let after = before;
    for (let i = 0; i < 40 && after.stat.version === before.stat.version; i++) {
      await new Promise((r) => setTimeout(r, 500));
      after = await getData(`/snowflake/${leafName}/forever/${mine}`);
    }
    expect(after.stat.version).toBeGreaterThan(before.stat.version);
    expect(after.data.timestamp as number).toBeGreaterThan(before.data.timestamp as number);

    // restarts: Sequoia killed and started again on its node; a Leaf holder restarted; a new Leaf holder beside
    for (const s of seq) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
    (leaves[0] as LeafHolder).stop();
    const restarting = Promise.all(nodes.map((n, i) => serve(leafName, n, dirs[i] as string)));
    const again = await holder(leafName, '10.9.0.1');
    note('10.9.0.1:8080', again.workerId);
    note('10.9.0.4:8080', (await holder(leafName, '10.9.0.4')).workerId);
    for (const [i, s] of (await restarting).entries()) note(nodes[i] as string, await workerIdOf(s));

    // each {ip}:{port} kept its one id, and no id belongs to two of them
    for (const [who, ids] of held) expect({ who, ids: ids.size }).toEqual({ who, ids: 1 });
    const all = [...held.values()].map((s) => [...s][0]);
    expect(new Set(all).size).toBe(held.size);
    expect(held.size).toBe(6);
  }, 180_000);

  it("refuses a start while the clock is behind its node's timestamp, as Leaf does", async () => {
    const leafName = `sequoia_test_${randomUUID().slice(0, 8)}`;
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-zkleaf-'));
    const s = await serve(leafName, '127.0.0.1:9003', dir);
    const id = await workerIdOf(s);
    s.child.kill('SIGKILL');
    await s.exited;
    const path = `/snowflake/${leafName}/forever/127.0.0.1:9003-${String(id).padStart(10, '0')}`;
    await call<zookeeper.Stat>((cb) =>
      zk?.setData(path, Buffer.from(JSON.stringify({ ip: '127.0.0.1', port: '9003', timestamp: Date.now() + 3_600_000 })), -1, cb),
    );
    const refused = await serve(leafName, '127.0.0.1:9003', dir);
    const r = await fetch(`${refused.url}/api/snowflake/get/x`);
    expect(r.status).toBe(503);
    expect(await r.text()).toMatch(/^CLOCK_MOVED_BACKWARDS: /);
    expect(refused.output()).toContain('behind the Leaf node timestamp');
    refused.child.kill('SIGKILL');
    await refused.exited;
    // Leaf's own holder refuses the same node
    await expect(startLeafHolder(ZK, leafName, '127.0.0.1', '9003')).rejects.toThrow(/timestamp/);
  }, 120_000);
});
