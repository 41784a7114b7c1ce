/**
 * One entry point: `npm start`, the Containerfile, the systemd unit and the
 * docs start the server with the package's own bin (package.json "bin", the
 * bundle), which reaches ready sooner than dist/cli/main.js and its couple of
 * hundred files. Derived from package.json, so a renamed bin fails here.
 */
import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deployFiles, parseContainerfile, parseUnit, read, runtimeImage } from './deploy-files.js';

const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string>; scripts: Record<string, string> };
const bin = posix.normalize(pkg.bin.sequoia!);

/** Every script path run with node on a line that starts the server (`node PATH serve`), as written. */
export function serverEntries(text: string): string[] {
  return [...text.replace(/\\\n\s*/g, ' ').matchAll(/\bnode"?,?\s+"?((?:\/|\.\/)?[\w./-]+\.m?js)"?,?\s+"?serve\b/g)].map((m) => m[1]!);
}

/** The page's and the files' texts that tell how to start a server. */
const texts = [
  ...deployFiles().filter((f) => !f.startsWith('deploy/secrets/')),
  'docs/deploy.md',
  'docs/cli.md',
  'docs/operations.md',
  'README.md',
].map((file) => ({ file, text: read(file) }));

describe('every way to start the server runs the package bin', () => {
  it('finds the entries it looks for (the extractor works)', () => {
    expect(serverEntries('ExecStart=node /opt/x/dist/cli/main.js serve --port 1')).toEqual(['/opt/x/dist/cli/main.js']);
    expect(serverEntries('ENTRYPOINT ["node", "dist/pkg/cli.js", "serve"]')).toEqual(['dist/pkg/cli.js']);
    expect(serverEntries('a supervisor should run\n`node dist/cli/main.js serve`.')).toEqual(['dist/cli/main.js']);
    expect(serverEntries('node x.js gen uuid; sequoia serve')).toEqual([]);
  });

  it('the bin is the bundle that package.json builds', () => {
    expect(bin).toMatch(/^dist\/pkg\/[\w-]+\.js$/);
    // `npm run bundle` is scripts/bundle.mjs: the bin's esbuild entry names dist/cli/main.js.
    expect(pkg.scripts.bundle).toBe('node scripts/bundle.mjs');
    expect(read('scripts/bundle.mjs')).toContain(`entryPoints: { ${posix.basename(bin, '.js')}: 'dist/cli/main.js' }`);
  });

  it('npm start', () => {
    expect(pkg.scripts.start).toBe(`node ${bin} serve`);
  });

  it('the Containerfile ENTRYPOINT, in the WORKDIR where dist/ is copied', () => {
    const image = runtimeImage(parseContainerfile(read('deploy/Containerfile')));
    expect(image.entrypoint).toEqual(['node', bin, 'serve']);
    expect(image.workdir).toBe('/app');
  });

  it("the systemd unit's ExecStart, under its WorkingDirectory", () => {
    const service = parseUnit(read('deploy/systemd/sequoia.service')).get('Service')!;
    const dir = service.get('WorkingDirectory')![0]!;
    expect(service.get('ExecStart')).toEqual([`node ${posix.join(dir, bin)} serve`]);
  });

  it.each(texts.map((t) => [t.file, t.text]))('%s: every `node … serve` runs the bin', (_file, text) => {
    for (const entry of serverEntries(text)) expect(entry.replace(/^\.\//, '').endsWith(bin), entry).toBe(true);
  });

  it("cli.md's supervisor advice and deploy.md name the bin", () => {
    expect(serverEntries(read('docs/cli.md'))).toContain(bin);
    expect(serverEntries(read('docs/deploy.md'))).toContain(bin);
  });
});
