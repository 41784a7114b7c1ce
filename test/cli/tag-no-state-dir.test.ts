/**
 * `tag` commands use no state directory: run from a directory the user
 * cannot write (or any other), they neither fail on `./data` (blaming the
 * store) nor leave `./data/state.db` and a reserve file behind. `fence` and
 * `gen segment` use it on purpose (the marks of the server whose dir it is).
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sequoia } from '../helpers/cli.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) {
    chmodSync(d, 0o755);
    rmSync(d, { recursive: true, force: true });
  }
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-no-state-'));
  dirs.push(d);
  return d;
}

describe('tag commands and the state directory', () => {
  for (const readOnly of [false, true]) {
    it(`create, list, update, delete from a ${readOnly ? 'read-only (555) ' : ''}cwd: succeed and create no ./data`, () => {
      const store = `sqlite:${join(tmp(), 'ids.db')}`;
      const cwd = tmp();
      // Tests run as root, whom mode 555 does not stop: the check that counts is that nothing appears in cwd.
      if (readOnly) chmodSync(cwd, 0o555);
      const run = (args: string[]) => {
        const r = sequoia([...args, '--store', store], {}, { cwd });
        expect(r.status, r.stderr).toBe(0);
        expect(r.stderr).not.toMatch(/STORE_UNAVAILABLE|state directory/);
        return r;
      };
      run(['tag', 'create', 'order', '--step', '50']);
      expect(run(['tag', 'list']).stdout).toMatch(/^order\t1\t50/m);
      run(['tag', 'update', 'order', '--step', '60']);
      run(['tag', 'delete', 'order']);
      expect(existsSync(join(cwd, 'data'))).toBe(false);
      expect(readdirSync(cwd)).toEqual([]);
    });
  }

  it('a --state-dir given to a tag command (scripts written before) is accepted and not created', () => {
    const dir = tmp();
    const store = `sqlite:${join(dir, 'ids.db')}`;
    const state = join(dir, 'state');
    const r = sequoia(['tag', 'create', 't', '--store', store, '--state-dir', state]);
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(state)).toBe(false);
    // fence uses the state dir on purpose.
    expect(sequoia(['fence', 't', '--to', '100', '--store', store, '--state-dir', state]).status).toBe(0);
    expect(existsSync(join(state, 'state.db'))).toBe(true);
  });
});
