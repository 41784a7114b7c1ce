import { describe, expect, it } from 'vitest';
import { DEFAULT_ZOOKEEPER_ROOT, ZookeeperWorkerIdProvider, defaultIdentity, parseZookeeperSpec } from './zookeeper-worker-id-provider.js';
import { ledgerRootOf } from './zookeeper-spec.js';

describe('parseZookeeperSpec', () => {
  it('reads servers, root and options', () => {
    expect(parseZookeeperSpec('zookeeper:127.0.0.1:2181')).toEqual({
      connect: '127.0.0.1:2181',
      root: DEFAULT_ZOOKEEPER_ROOT,
      reclaimAfterMs: undefined,
      identity: undefined,
      reportIntervalMs: undefined,
    });
    expect(parseZookeeperSpec('zookeeper:zk1:2181,zk2:2182/ids/sf/?reclaim-after=86400&node=web-1:8080&report-interval=1000')).toEqual({
      connect: 'zk1:2181,zk2:2182',
      root: '/ids/sf',
      reclaimAfterMs: 86_400_000,
      identity: 'web-1:8080',
      reportIntervalMs: 1000,
    });
  });

  it.each([
    'zookeeper:',
    'zookeeper:host',
    'zookeeper:h:1/',
    'zookeeper:h:1/a/../b',
    'zookeeper:h:1?reclaim-after=1',
    'zookeeper:h:1?x=1',
    'zookeeper:h:1?node=a/b',
    'zookeeper:h:1?leaf=.',
    'zookeeper:h:1?leaf=..',
  ])('refuses %s', (spec) => {
    expect(() => parseZookeeperSpec(spec)).toThrow(/INVALID_ARGUMENT|expected zookeeper:/);
  });

  it("keeps the ledger in the provider's root, and for leaf=NAME outside Leaf's /snowflake/NAME", () => {
    expect(ledgerRootOf(parseZookeeperSpec('zookeeper:zk1:2181/ids/sf'))).toBe('/ids/sf');
    expect(ledgerRootOf(parseZookeeperSpec('zookeeper:zk1:2181?leaf=order.v2'))).toBe('/sequoia/leaf/order.v2');
  });

  it('refuses a reclaim period a holder could not report within', () => {
    expect(() => new ZookeeperWorkerIdProvider({ connect: 'h:1', stateDir: '/tmp/x', reclaimAfterMs: 10_000 })).toThrow(/at least 18 s/);
    expect(() => new ZookeeperWorkerIdProvider({ connect: 'h:1', stateDir: '/tmp/x', reclaimAfterMs: 18_000 })).not.toThrow();
  });

  it('the default identity is host:port qualified by the state directory', () => {
    expect(defaultIdentity('web-1', 8080, '/srv/a')).toMatch(/^web-1:8080@[0-9a-f]{8}$/);
    expect(defaultIdentity('web-1', 8080, '/srv/a')).not.toBe(defaultIdentity('web-1', 8080, '/srv/a/workers/1'));
  });
});
