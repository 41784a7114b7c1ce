/**
 * Supported Node versions, as npm checks them: `npm ci` warns EBADENGINE for
 * every locked package whose `engines.node` excludes the running Node. The
 * published package promises its own `engines` (production dependencies);
 * a checkout (dev dependencies too: eslint) needs Node 20.19 or later. Node 24
 * is the current LTS, which .ci/run also tests on.
 */
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/cli.js';

interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string };
}
const lock = JSON.parse(readFileSync(`${ROOT}/package-lock.json`, 'utf8')) as { packages: Record<string, LockEntry> };
const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { engines: { node: string } };

function refusing(node: string, includeDev: boolean): string[] {
  return Object.entries(lock.packages)
    .filter(([, e]) => (includeDev || !e.dev) && e.engines?.node !== undefined && !semver.satisfies(node, e.engines.node))
    .map(([path, e]) => `${path.replace(/^.*node_modules\//, '')}@${e.version ?? ''} wants node ${e.engines?.node ?? ''}`);
}

describe('Node versions', () => {
  it("production dependencies accept the package's lowest promised Node and Node 24", () => {
    const lowest = semver.minVersion(pkg.engines.node)?.version ?? '';
    // 20.16: process.getBuiltinModule, which the library entry uses instead of node:module (feistel-permutation.ts).
    expect(lowest).toBe('20.16.0');
    expect(refusing(lowest, false)).toEqual([]);
    expect(refusing('24.0.0', false)).toEqual([]);
  });

  it('a checkout installs without EBADENGINE on Node 20.19+ and Node 24 (cookie pinned for light-my-request)', () => {
    for (const node of ['20.19.0', process.versions.node, '24.0.0']) expect(refusing(node, true), node).toEqual([]);
  });
});
