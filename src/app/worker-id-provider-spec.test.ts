/**
 * The worker-id-provider grammar has one home (worker-id-provider-spec.ts):
 * the config check, the wiring and the CLI parse with it, and the help and
 * docs quote its text. A second copy of the grammar anywhere in src/ fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from './config.js';
import { WORKER_ID_PROVIDER_SPECS, parseWorkerIdProvider } from './worker-id-provider-spec.js';

const SRC = fileURLToPath(new URL('..', import.meta.url));
const HERE = join(SRC, 'app', 'worker-id-provider-spec.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}

const GOOD: [string, unknown][] = [
  ['lease', { kind: 'lease' }],
  ['sql-lease', { kind: 'lease' }],
  [' lease ', { kind: 'lease' }],
  ['static:0', { kind: 'static', workerId: 0 }],
  ['static:123456789', { kind: 'static', workerId: 123456789 }],
  ['k8s-ordinal', { kind: 'k8s-ordinal', offset: 0 }],
  ['k8s-ordinal:100', { kind: 'k8s-ordinal', offset: 100 }],
  ['worker-node', { kind: 'worker-node' }],
  [
    'worker-node:mysql://u:p@db:3306/uid',
    { kind: 'worker-node', table: { engine: 'mysql', url: 'mysql://u:p@db:3306/uid', table: 'WORKER_NODE' } },
  ],
  [
    'worker-node:mysql://db/uid?table=T_WORKER_NODE',
    { kind: 'worker-node', table: { engine: 'mysql', url: 'mysql://db/uid', table: 'T_WORKER_NODE' } },
  ],
  ['worker-node:postgres://db/uid', { kind: 'worker-node', table: { engine: 'postgres', url: 'postgres://db/uid', table: 'worker_node' } }],
  [
    'worker-node:postgresql://db/uid?table=ids.worker_node',
    { kind: 'worker-node', table: { engine: 'postgres', url: 'postgresql://db/uid', table: 'ids.worker_node' } },
  ],
];
const BAD = [
  '',
  'static',
  'static:',
  'static:-1',
  'static:1234567890',
  'lease:3',
  'worker-node:1',
  'k8s-ordinal:x',
  'zookeeper',
  'zookeeper:',
  'zookeeper:host',
  'zookeeper:h:1/..',
  'etcd:h:1',
  'LEASE',
  'worker-node:redis://h:1',
  'worker-node:mysql://db/uid?table=a;b',
  'worker-node:mysql://db/uid?tabel=X',
  'worker-node:mysql://',
];

describe('the worker-id-provider grammar', () => {
  it.each(GOOD)('parses %j', (spec, want) => {
    expect(parseWorkerIdProvider(spec)).toEqual(want);
    expect(resolveConfig({ workerIdProvider: spec }, {}, undefined).workerIdProvider).toBe(spec);
  });

  it('parses a ZooKeeper spec into its typed parts', () => {
    expect(parseWorkerIdProvider('zookeeper:zk1:2181,zk2:2181/ids?reclaim-after=60&node=web-1')).toEqual({
      kind: 'zookeeper',
      zookeeper: { connect: 'zk1:2181,zk2:2181', root: '/ids', reclaimAfterMs: 60_000, identity: 'web-1', reportIntervalMs: undefined },
    });
  });

  it("parses Leaf's tree: leaf=NAME, its fixed root, a node named IP:PORT", () => {
    expect(parseWorkerIdProvider('zookeeper:zk1:2181?leaf=order&node=10.0.0.5:8080')).toEqual({
      kind: 'zookeeper',
      zookeeper: {
        connect: 'zk1:2181',
        root: '/snowflake/order',
        reclaimAfterMs: undefined,
        identity: '10.0.0.5:8080',
        reportIntervalMs: undefined,
        leafName: 'order',
      },
    });
    for (const bad of [
      'zookeeper:zk1:2181/ids?leaf=order',
      'zookeeper:zk1:2181?leaf=order&reclaim-after=60',
      'zookeeper:zk1:2181?leaf=order&node=web-1:8080',
      'zookeeper:zk1:2181?leaf=a/b',
    ]) {
      expect(() => parseWorkerIdProvider(bad)).toThrow(/leaf/);
    }
    expect(() => resolveConfig({ workerIdProvider: 'zookeeper:zk1:2181?leaf=order', workers: 2 }, {}, undefined)).toThrow(/--workers 1/);
  });

  it.each(BAD.map((b) => [b]))('refuses %j, in the parser and in the config alike', (spec) => {
    expect(() => parseWorkerIdProvider(spec)).toThrow(/INVALID_ARGUMENT|worker id provider/);
    expect(() => resolveConfig({ workerIdProvider: spec }, {}, undefined)).toThrow(/workerIdProvider/);
  });

  it('names the whole grammar in its message, zookeeper included', () => {
    expect(() => parseWorkerIdProvider('etcd:h:1')).toThrow(WORKER_ID_PROVIDER_SPECS);
    expect(WORKER_ID_PROVIDER_SPECS).toMatch(/lease.*static:N.*k8s-ordinal\[:OFFSET\].*worker-node.*zookeeper:HOST:PORT/);
  });

  it('has no second copy in src/: the help texts and the docs table quote WORKER_ID_PROVIDER_SPECS', () => {
    const copies = sourceFiles(SRC).filter(
      (f) =>
        f !== HERE && f !== join(SRC, 'app/defaults.ts') && /k8s-ordinal\[:OFFSET\]|k8s-ordinal\(:|\(lease\|/.test(readFileSync(f, 'utf8')),
    );
    expect(copies.map((f) => f.slice(SRC.length))).toEqual([]);
    for (const user of ['cli/gen-explain.ts', 'app/config-docs.ts'])
      expect(readFileSync(join(SRC, user), 'utf8')).toContain('WORKER_ID_PROVIDER_SPECS');
  });
});
