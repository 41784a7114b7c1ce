/** Docs that cannot drift: the README names every error code with its status, and every config field. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../src/app/config.js';
import { ERROR_CODES, ERROR_DOCS } from '../src/core/errors.js';
import { ERROR_STATUS } from '../src/server/error-status.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it.each(ERROR_CODES.map((c) => [c]))('documents error %s with its status', (code) => {
    expect(readme).toMatch(new RegExp(`\\| \`${code}\` \\| ${ERROR_STATUS[code]} \\|`));
    expect(ERROR_DOCS[code].length).toBeGreaterThan(10);
  });

  it.each(Object.entries(FIELDS).map(([k, f]) => [k, f.flag, f.env]))('documents config field %s (%s, %s)', (name, flag, env) => {
    expect(readme).toContain(`| \`${name}\` | \`${flag}\` | \`${env}\` |`);
  });

  it('shows the two commands of a fresh machine', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });
});
