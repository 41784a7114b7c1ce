/**
 * Every `--help` of the built command that names a setting of the field table
 * (by its flag) states that field's default and environment variable, not a
 * copy that can drift: the table in src/app/config.ts is their one home.
 */
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../src/app/config.js';
import { sequoia } from '../helpers/cli.js';

const BY_FLAG = new Map<string, (typeof FIELDS)[keyof typeof FIELDS]>(Object.values(FIELDS).map((f) => [f.flag, f]));
/** Options that set a field under a shorter flag of their own. */
const ALIASES: Record<string, keyof typeof FIELDS> = { 'gen --layout': 'snowflakeLayout' };

/** The help's entries under `title` ("Options:" or "Commands:"), continuation lines joined. */
function section(help: string, title: string): string[] {
  const lines = help.split('\n');
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '') break;
    // commander wraps a long description onto lines indented past the entry's own.
    if (/^ {3,}/.test(line) && out.length > 0) out[out.length - 1] += ` ${line.trim()}`;
    else out.push(line.trim());
  }
  return out;
}

/** Every command path, from the top-level help down. */
function commands(path: string[] = []): string[][] {
  const r = sequoia([...path, '--help']);
  expect(r.status, `${path.join(' ')} --help: ${r.stderr}`).toBe(0);
  const subs = section(r.stdout, 'Commands:')
    .map((l) => l.split(/\s+/)[0]!)
    .filter((name) => name !== 'help');
  return [path, ...subs.flatMap((name) => commands([...path, name]))];
}

/** What an option's description says about a field: its default and environment variable. */
function claims(description: string): { default?: string; env?: string } {
  return {
    default: [...description.matchAll(/[(;] ?default ([^;)\s]+)/g)].at(-1)?.[1],
    env: /\benv (SEQUOIA_[A-Z0-9_]+)/.exec(description)?.[1],
  };
}

describe('help texts and the field table', () => {
  it('reads what an option says about its default', () => {
    expect(claims('store URL (env SEQUOIA_STORE; default sqlite:./data/sequoia.db)')).toEqual({
      default: 'sqlite:./data/sequoia.db',
      env: 'SEQUOIA_STORE',
    });
    expect(claims('snowflake layout: twitter | leaf (env SEQUOIA_SNOWFLAKE_LAYOUT; default twitter)')).toEqual({
      default: 'twitter',
      env: 'SEQUOIA_SNOWFLAKE_LAYOUT',
    });
    expect(claims('the tag to draw from')).toEqual({ default: undefined, env: undefined });
    expect(claims('default snowflake layout (env SEQUOIA_SNOWFLAKE_LAYOUT; default twitter)').default).toBe('twitter');
  });

  it('every help that names a field states the default and environment variable the table holds', { timeout: 120_000 }, () => {
    const checked: string[] = [];
    const drift: string[] = [];
    for (const path of commands()) {
      // serve's options are made from the table (only when serve is named): its help is checked like the rest.
      const help = sequoia([...path, '--help']).stdout;
      for (const entry of section(help, 'Options:')) {
        const flag = /^(?:-\w, )?(--[a-z0-9-]+)/.exec(entry)?.[1];
        if (flag === undefined) continue;
        const alias = ALIASES[`${path.join(' ')} ${flag}`];
        const field = alias === undefined ? BY_FLAG.get(flag) : FIELDS[alias];
        if (field === undefined) continue;
        // The field's own doc (which may name a derived default) is the table's text, not a copy.
        const said = claims(entry.replace(field.doc, ''));
        const where = `sequoia ${path.join(' ')} ${flag}`;
        checked.push(where);
        if (said.default !== undefined && said.default !== String(field.default ?? 'none'))
          drift.push(`${where}: help says default ${said.default}, the table ${String(field.default ?? 'none')}`);
        if (said.env !== undefined && said.env !== field.env) drift.push(`${where}: help says env ${said.env}, the table ${field.env}`);
      }
    }
    expect(drift).toEqual([]);
    // The walk reached the commands that restate the table's defaults.
    expect(checked).toEqual(
      expect.arrayContaining([
        'sequoia serve --store',
        'sequoia gen --store',
        'sequoia gen --state-dir',
        'sequoia gen --layout',
        'sequoia tag create --store',
        'sequoia fence --state-dir',
      ]),
    );
  });
});
