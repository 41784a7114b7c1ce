import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from './config.js';

describe('resolveConfig', () => {
  it('uses defaults', () => {
    expect(resolveConfig({}, {}, undefined)).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      store: 'sqlite:./data/sequoia.db',
      stateDir: './data',
      maxStep: 1_000_000,
    });
  });

  it('flags beat env beat file beat defaults', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sequoia-cfg-')), 'c.json');
    writeFileSync(file, JSON.stringify({ port: 1000, host: '0.0.0.0', stateDir: '/f', maxStep: 10 }));
    const c = resolveConfig({ port: '3000' }, { SEQUOIA_PORT: '2000', SEQUOIA_HOST: '::1' }, file);
    expect(c.port).toBe(3000);
    expect(c.host).toBe('::1');
    expect(c.stateDir).toBe('/f');
    expect(c.maxStep).toBe(10);
    expect(c.logLevel).toBe('info');
  });

  it('reports every bad field at once', () => {
    try {
      resolveConfig({ port: '-1', loadTimeoutMs: '1.5' }, { SEQUOIA_ADMIN_TOKEN: 'short' }, undefined);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const p = (e as ConfigError).problems;
      expect(p).toHaveLength(3);
      expect(p.join('\n')).toMatch(/port \(from --port\)/);
      expect(p.join('\n')).toMatch(/loadTimeoutMs \(from --load-timeout-ms\)/);
      expect(p.join('\n')).toMatch(/adminToken \(from SEQUOIA_ADMIN_TOKEN\): must be at least 8 characters/);
      expect(p.join('\n')).not.toMatch(/short/); // a secret is never echoed
    }
  });

  it("says zod's English message where a schema gives none of its own (a wrong type, a key too many)", () => {
    const problems = (flags: Parameters<typeof resolveConfig>[0]): string[] => {
      try {
        resolveConfig(flags, {}, undefined);
        return [];
      } catch (e) {
        return (e as ConfigError).problems;
      }
    };
    expect(problems({ host: 5 })).toEqual(['host (from --host): Invalid input: expected string, received number, got 5']);
    expect(problems({ clientTokens: [{ token: 'abcdefghijklmnopq', tags: ['order'], role: 'x' }] })).toEqual([
      'clientTokens (from --client-tokens): Unrecognized key: "role"',
    ]);
  });

  it('validates named business-number formats and never echoes them (they hold keys)', () => {
    const ok = resolveConfig(
      {},
      { SEQUOIA_FORMATS: JSON.stringify({ order: { kind: 'permuted-base32', bits: 60, key: 'k'.repeat(20) } }) },
      undefined,
    );
    expect(ok.formats?.order).toMatchObject({ kind: 'permuted-base32', bits: 60 });
    try {
      resolveConfig(
        { formats: JSON.stringify({ order: { kind: 'permuted-base32', bits: 99, key: 'secret-key-1234567890' } }) },
        {},
        undefined,
      );
      expect.unreachable();
    } catch (e) {
      const msg = (e as ConfigError).problems.join('\n');
      expect(msg).toMatch(/formats \(from --formats\): formats\.order\.bits/);
      expect(msg).not.toMatch(/secret-key/);
    }
  });

  it('reads secrets from files, and checks pairs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-cfg-'));
    writeFileSync(join(dir, 'admin'), 'from-a-file-123\n');
    writeFileSync(join(dir, 'clients.json'), JSON.stringify([{ token: 'client-token-0123456789', tags: ['order'] }]));
    const c = resolveConfig({ adminTokenFile: join(dir, 'admin'), clientTokensFile: join(dir, 'clients.json') }, {}, undefined);
    expect(c.adminToken).toBe('from-a-file-123');
    expect(c.clientTokens).toEqual([{ token: 'client-token-0123456789', tags: ['order'] }]);
    const bad = (flags: Record<string, string>) => {
      try {
        resolveConfig(flags, {}, undefined);
      } catch (e) {
        return (e as ConfigError).problems.join('\n');
      }
      return '';
    };
    expect(bad({ adminTokenFile: join(dir, 'missing') })).toMatch(/adminTokenFile: cannot read/);
    // The metrics token from a file (a mounted secret), held to the metrics token's own rule, never echoed.
    writeFileSync(join(dir, 'metrics'), 'metrics-token-from-a-file\n');
    expect(resolveConfig({ metricsTokenFile: join(dir, 'metrics') }, {}, undefined).metricsToken).toBe('metrics-token-from-a-file');
    writeFileSync(join(dir, 'short'), 'short-secret\n');
    expect(bad({ metricsTokenFile: join(dir, 'short') })).toBe('metricsTokenFile: must be at least 16 characters');
    expect(bad({ metricsToken: 'metrics-token-0123456789', metricsTokenFile: join(dir, 'metrics') })).toBe(
      'metricsTokenFile: give either metricsToken or metricsTokenFile, not both',
    );
    expect(bad({ clientTokens: '[{"token":"short","tags":["a"]}]' })).toMatch(
      /clientTokens \(from --client-tokens\): each token must be at least 16/,
    );
    expect(bad({ clientTokens: '[{"token":"short","tags":["a"]}]' })).not.toMatch(/"short"/);
    expect(bad({ rateLimit: '-3' })).toMatch(/rateLimit/);
  });

  it('metrics token, trusted proxies and client token names: each bad one named, secrets never echoed', () => {
    const bad = (flags: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): string => {
      try {
        resolveConfig(flags, env, undefined);
      } catch (e) {
        return (e as ConfigError).problems.join('\n');
      }
      return '';
    };
    const c = resolveConfig(
      {},
      { SEQUOIA_METRICS_TOKEN: 'scrape-token-0123456789', SEQUOIA_TRUSTED_PROXIES: '10.0.0.0/8, loopback' },
      undefined,
    );
    expect(c.metricsToken).toBe('scrape-token-0123456789');
    expect(c.trustedProxies).toEqual(['10.0.0.0/8', 'loopback']);
    expect(bad({ metricsToken: 'short' })).toMatch(/metricsToken \(from --metrics-token\): must be at least 16/);
    expect(bad({ metricsToken: 'short' })).not.toMatch(/short"/);
    expect(bad({}, { SEQUOIA_TRUSTED_PROXIES: '10.0.0.0/99' })).toMatch(/trustedProxies \(from SEQUOIA_TRUSTED_PROXIES\): /);
    const two = (a: string, b: string) =>
      JSON.stringify([
        { token: 'aaaa-token-0123456789', tags: ['*'], name: a },
        { token: 'bbbb-token-0123456789', tags: ['*'], name: b },
      ]);
    expect(bad({ clientTokens: two('orders', 'orders') })).toMatch(/clientTokens .*two tokens share the name orders/);
    expect(bad({ clientTokens: two('bad name', 'x') })).toMatch(/clientTokens .*names are 1-64/);
    expect(resolveConfig({ clientTokens: two('orders', 'billing') }, {}, undefined).clientTokens?.map((t) => t.name)).toEqual([
      'orders',
      'billing',
    ]);
  });

  it('checks the rules across fields before any file is read, each problem naming the field to change', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-cfg-'));
    const missing = join(dir, 'missing');
    const problems = (flags: Record<string, string>): string[] => {
      try {
        resolveConfig(flags, {}, undefined);
      } catch (e) {
        return (e as ConfigError).problems;
      }
      return [];
    };
    // A missing file is not read while a rule across fields fails: the rule is the one problem.
    expect(problems({ adminToken: 'admin-token-1', adminTokenFile: missing })).toEqual([
      'adminTokenFile: give either adminToken or adminTokenFile, not both',
    ]);
    expect(problems({ clientTokens: '[{"token":"client-token-0123456789","tags":["a"]}]', clientTokensFile: missing })).toEqual([
      'clientTokensFile: give either clientTokens or clientTokensFile, not both',
    ]);
    expect(problems({ tlsCert: missing })).toEqual(['tlsKey: tlsCert is set: give the key too (both or neither)']);
    expect(problems({ tlsKey: missing })).toEqual(['tlsCert: tlsKey is set: give the certificate too (both or neither)']);
    // Several at once, each named.
    expect(
      problems({ tlsCert: missing, adminToken: 'admin-token-1', adminTokenFile: missing, snowflakeLayout: 'nope' }).map(
        (p) => p.split(':')[0],
      ),
    ).toEqual(['adminTokenFile', 'snowflakeLayout', 'tlsKey']);
    // With the rules met, the files are read.
    expect(problems({ tlsCert: missing, tlsKey: missing })).toEqual([
      `tlsCert: cannot read ${missing} (ENOENT)`,
      `tlsKey: cannot read ${missing} (ENOENT)`,
    ]);
  });

  it('refuses a static snowflake worker id shared by several worker processes', () => {
    expect(() => resolveConfig({ workerIdProvider: 'static:3', workers: '2' }, {}, undefined)).toThrow(/same snowflake worker id/);
    expect(resolveConfig({ workerIdProvider: 'static:3', workers: '1' }, {}, undefined).workerIdProvider).toBe('static:3');
  });

  it('refuses k8s-ordinal with several worker processes too, and recommends no provider with the same problem', () => {
    for (const workers of ['2', 'auto']) {
      for (const p of ['static:3', 'k8s-ordinal', 'k8s-ordinal:16']) {
        let message = '';
        try {
          resolveConfig({ workerIdProvider: p, workers }, {}, undefined);
        } catch (e) {
          message = (e as ConfigError).problems.join('\n');
        }
        expect(message).toMatch(/^workerIdProvider: .*same snowflake worker id; use --workers 1/);
        expect(message).not.toMatch(/use .*(static|k8s-ordinal) provider/);
      }
    }
    expect(resolveConfig({ workerIdProvider: 'k8s-ordinal', workers: '1' }, {}, undefined).workerIdProvider).toBe('k8s-ordinal');
  });

  it('workers: 1 by default; auto is one per core (kept as 0); bad values name the field', () => {
    expect(resolveConfig({}, {}, undefined).workers).toBe(1);
    expect(resolveConfig({ workers: 'auto' }, {}, undefined).workers).toBe(0);
    expect(resolveConfig({}, { SEQUOIA_WORKERS: '3' }, undefined).workers).toBe(3);
    // 0 is no spelling of auto: before, it quietly ran one worker per core.
    expect(() => resolveConfig({ workers: '0' }, {}, undefined)).toThrow(/workers \(from .*\): must be at least 1/);
    expect(() => resolveConfig({}, { SEQUOIA_WORKERS: '0' }, undefined)).toThrow(/workers/);
    expect(() => resolveConfig({ workers: 'many' }, {}, undefined)).toThrow(
      /workers \(from --workers\): must be auto or an integer from 1 to 256/,
    );
    expect(() => resolveConfig({ workers: '300' }, {}, undefined)).toThrow(/workers \(from --workers\)/);
  });
});
