/**
 * A server is one process by default, so the IDs it hands out for a tag
 * increase (the README's Quick start); `--workers auto` forks one worker per
 * core; providers that would give every worker the same snowflake id refuse
 * to start with several workers, naming the fix. Real `serve` processes.
 */
import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decompose, getLayout } from '../../src/core/snowflake/layout.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { connectZk, ZK } from '../helpers/zookeeper.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

function fresh(): { store: string; stateDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-workers-'));
  return { store: `sqlite:${join(dir, 'ids.db')}`, stateDir: join(dir, 'state') };
}

describe('serve without --workers', () => {
  it('is one process: the IDs of a tag increase across routes and connections', async () => {
    const { store, stateDir } = fresh();
    expect(sequoia(['tag', 'create', 'order', '--store', store, '--state-dir', stateDir]).status).toBe(0);
    const s = await startServe(['--store', store, '--state-dir', stateDir]);
    running.push(s);
    expect(s.output()).not.toContain('workerPids');
    const ids: bigint[] = [];
    for (let i = 0; i < 12; i++) {
      // connection: close: with several workers, round-robin would spread these over them
      const leaf = await fetch(`${s.url}/api/segment/get/order`, { headers: { connection: 'close' } });
      ids.push(BigInt(await leaf.text()));
      const batch = await fetch(`${s.url}/v1/segment/order?count=3`, { headers: { connection: 'close' } });
      for (const id of ((await batch.json()) as { ids: string[] }).ids) ids.push(BigInt(id));
    }
    expect(ids.slice(0, 4)).toEqual([1n, 2n, 3n, 4n]);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }, 60_000);

  it('--workers auto starts one worker per core', async () => {
    const { store, stateDir } = fresh();
    const s = await startServe(['--workers', 'auto', '--store', store, '--state-dir', stateDir]);
    running.push(s);
    const listening = s
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"listening"'))!;
    const n = availableParallelism();
    if (n > 1) expect((JSON.parse(listening) as { workerPids: number[] }).workerPids).toHaveLength(n);
    else expect(listening).not.toContain('workerPids');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }, 60_000);
});

describe('one snowflake worker id per worker process', () => {
  it.each(['k8s-ordinal', 'static:3'])('%s with --workers 2 refuses to start (exit 2), naming the fix', (provider) => {
    const { store, stateDir } = fresh();
    const r = sequoia([
      'serve',
      '--port',
      '0',
      '--workers',
      '2',
      '--worker-id-provider',
      provider,
      '--store',
      store,
      '--state-dir',
      stateDir,
    ]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/workerIdProvider: .*same snowflake worker id; use --workers 1/);
    expect(r.stderr).not.toMatch(/use .*(static|k8s-ordinal) provider/);
  });
});

const describeZk = await describeWithService('ZooKeeper', async () => (await connectZk()).close());

/** Snowflake IDs over fresh connections (round-robin over the workers): the worker ids seen, and every ID. */
async function workerIdsSeen(url: string): Promise<{ nodes: Set<number>; ids: string[] }> {
  const twitter = getLayout('twitter');
  const nodes = new Set<number>();
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const r = await fetch(`${url}/v1/snowflake?count=200`, { headers: { connection: 'close' } });
    expect(r.status).toBe(200);
    for (const id of ((await r.json()) as { ids: string[] }).ids) {
      ids.push(id);
      const v = decompose(twitter, BigInt(id)).values;
      nodes.add(((v.datacenter as number) << 5) | (v.worker as number));
    }
  }
  return { nodes, ids };
}

/** A `--workers 2` server on a fresh SQLite store: both workers answer, each on its own worker id, nothing repeats, and it stops cleanly. */
async function expectTwoWorkersOnTwoIds(providerArgs: string[]): Promise<void> {
  const { store, stateDir } = fresh();
  const s = await startServe(['--workers', '2', '--store', store, '--state-dir', stateDir, ...providerArgs]);
  running.push(s);
  const { nodes, ids } = await workerIdsSeen(s.url);
  expect(nodes.size).toBe(2);
  expect(new Set(ids).size).toBe(ids.length);
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

describe('lease provider with --workers 2 (SQLite)', () => {
  it('each worker issues on its own worker id; no repeats', () => expectTwoWorkersOnTwoIds([]), 60_000);
});

describeZk('zookeeper provider with --workers 2', () => {
  it('each worker of one port is its own node with its own worker id, although they share the state directory', async () => {
    const root = `/sequoia-test/${Math.random().toString(36).slice(2, 10)}`;
    await expectTwoWorkersOnTwoIds(['--worker-id-provider', `zookeeper:${ZK}${root}`]);
  }, 60_000);
});
