/**
 * What the published package holds and says (issue 26): a LICENSE, where the
 * project lives, the docs the README links to, no source map pointing at
 * unshipped sources, no relative README link to an unshipped file, and an
 * example lockfile that matches the package it links (so `npm install` there
 * leaves the tree clean).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, assertBuilt } from '../helpers/cli.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown> & {
  name: string;
  repository: { url: string };
  homepage: string;
  bugs: { url: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
  engines: Record<string, string>;
};
const repo = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
const BLOB = `${repo}/blob/main/`;

describe('the package', () => {
  it('is sequoia-id with its command sequoia, MIT with a LICENSE, and says where it lives', () => {
    expect(pkg.name).toBe('sequoia-id');
    expect(Object.keys(pkg.bin)).toEqual(['sequoia']);
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    expect(repo).toMatch(/^https:\/\/github\.com\/[\w.-]+\/[\w.-]+$/);
    expect(pkg.homepage.startsWith(repo)).toBe(true);
    expect(pkg.bugs.url).toBe(`${repo}/issues`);
  });

  it("carries no install-time script: a consumer's npm lists none, a checkout builds on npm ci all the same", () => {
    // npm packs scripts as they are; `prepare` is listed as an install script not covered by
    // `allowScripts` for a tarball or git source, and npm exec runs it when it installs a checkout's own bin.
    const scripts = pkg.scripts as Record<string, string>;
    expect(Object.keys(scripts).filter((s) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(s))).toEqual([]);
    // npm ci and npm install run postprepare for the project itself only; npm pack and publish run prepack
    expect(scripts.postprepare).toBe('npm run build');
    expect(scripts.prepack).toBe('npm run build');
  });

  it('packs LICENSE, README, docs and dist, and no source maps', () => {
    assertBuilt();
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }),
    ) as { files: { path: string }[] }[];
    const files = packed[0]!.files.map((f) => f.path);
    for (const f of ['LICENSE', 'README.md', 'package.json', 'docs/library.md', 'dist/pkg/cli.js', 'dist/app/index.d.ts'])
      expect(files).toContain(f);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    // every relative link of a shipped page points at a shipped file
    const shipped = new Set(files);
    const broken: string[] = [];
    for (const page of files.filter((f) => f.endsWith('.md'))) {
      for (const m of readFileSync(join(ROOT, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue;
        const path = normalize(join(dirname(page), target.split('#')[0]!));
        if (!shipped.has(path)) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('absolute links into the repository name files that exist', () => {
    const pages = ['README.md', ...readdirMd('docs')];
    const missing: string[] = [];
    for (const page of pages) {
      for (const m of readFileSync(join(ROOT, page), 'utf8').matchAll(/\]\((https:\/\/github\.com\/[^)\s]+)\)/g)) {
        if (!m[1]!.startsWith(BLOB)) continue;
        const path = m[1]!.slice(BLOB.length).split('#')[0]!;
        if (!existsSync(join(ROOT, path))) missing.push(`${page}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("examples/shortlink's lockfile matches the package it links (npm install there changes nothing)", () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'examples', 'shortlink', 'package-lock.json'), 'utf8')) as {
      packages: Record<string, Record<string, unknown>>;
    };
    const linked = lock.packages['../..']!;
    expect(linked.name).toBe(pkg.name);
    expect(linked.dependencies).toEqual(pkg.dependencies);
    expect(linked.devDependencies).toEqual(pkg.devDependencies);
    expect(linked.bin).toEqual(pkg.bin);
    expect(linked.engines).toEqual(pkg.engines);
    expect(lock.packages[`node_modules/${pkg.name}`]).toEqual({ resolved: '../..', link: true });
  });
});

function readdirMd(dir: string): string[] {
  return readdirSync(join(ROOT, dir))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `${dir}/${f}`);
}
