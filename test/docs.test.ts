/**
 * Docs that cannot drift: the HTTP API page names every error code with its status, the configuration
 * page every config field, the README the two commands of a fresh machine, and every relative link in
 * the README and docs/ points at a file (and heading) that exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../src/app/config.js';
import { withConfigurationTable } from '../src/app/config-docs.js';
import { ERROR_CODES, ERROR_DOCS, ERRORS } from '../src/core/errors.js';
import { ERROR_STATUS } from '../src/server/error-status.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const readme = read('README.md');
const httpApi = read('docs/http-api.md');
const configuration = read('docs/configuration.md');

describe('docs/http-api.md', () => {
  /** The rows of the page's error table (after its `| code | HTTP | meaning |` head), as written. */
  function errorRows(page: string): string[] {
    const lines = page.split('\n');
    const head = lines.indexOf('| code | HTTP | meaning |');
    expect(head).toBeGreaterThan(-1);
    const rows: string[] = [];
    for (const line of lines.slice(head + 2)) {
      if (!line.startsWith('|')) break;
      rows.push(line);
    }
    return rows;
  }

  it('has the error table of core/errors.ts, word for word and in its order (code, status, doc)', () => {
    expect(errorRows(httpApi)).toEqual(ERROR_CODES.map((c) => `| \`${c}\` | ${ERRORS[c].status} | ${ERRORS[c].doc} |`));
  });

  it('would see a row that drifted', () => {
    const drifted = httpApi.replace(`| ${ERRORS.SEGMENTS_EXHAUSTED.doc} |`, '| Both segments are used up. |');
    expect(drifted).not.toBe(httpApi);
    expect(errorRows(drifted)).not.toEqual(ERROR_CODES.map((c) => `| \`${c}\` | ${ERRORS[c].status} | ${ERRORS[c].doc} |`));
  });

  it('answers every code with the status of its row, and the docs list is the table', () => {
    for (const c of ERROR_CODES) {
      expect(ERROR_STATUS[c]).toBe(ERRORS[c].status);
      expect(ERROR_DOCS[c]).toBe(ERRORS[c].doc);
    }
  });
});

describe('docs/configuration.md', () => {
  it('holds the table generated from the field table (run `npm run docs:config` after changing a field)', () => {
    expect(configuration).toBe(withConfigurationTable(configuration));
  });

  it.each(Object.entries(FIELDS).map(([k, f]) => [k, f.flag, f.env]))('documents config field %s (%s, %s)', (name, flag, env) => {
    expect(configuration).toContain(`| \`${name}\` | \`${flag}\` | \`${env}\` |`);
  });
});

describe('README', () => {
  it('shows the two commands of a fresh machine', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });

  it('links every page of docs/', () => {
    const pages = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'));
    expect(pages.length).toBeGreaterThan(5);
    for (const page of pages) expect(readme).toContain(`(docs/${page})`);
  });
});

describe('the command the pages name', () => {
  const pages = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  it.each(pages.map((p) => [p]))('%s runs the CLI as `npx --no-install sequoia`, never an npx that may download `sequoia`', (page) => {
    // `sequoia` on npm is an unrelated package: where sequoia-id is not installed, plain npx would fetch it.
    // (`npx --no sequoia --version` is npm's --version: npx takes `sequoia` for the value of --no.)
    const risky = read(page)
      .split('\n')
      .filter((l) => /\bnpx\s+(?!--no-install\s)[^`\s]*\s*sequoia\b/.test(l) || /\bnpm\s+exec\b/.test(l));
    expect(risky).toEqual([]);
  });
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    out.add(
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    );
  }
  return out;
}

describe('links between pages', () => {
  const files = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  it.each(files.map((f) => [f]))('%s links only to files and headings that exist', (file) => {
    const text = read(file);
    const broken: string[] = [];
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path === '' ? file : join(dirname(file), path);
      if (!existsSync(join(root, resolved))) {
        broken.push(target);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) broken.push(target);
    }
    expect(broken).toEqual([]);
  });
});
