/**
 * The CLI's `gen segment` and `fence` hold a state dir to one store as a
 * server does (issue 40 item 6): a dir bound to another store is refused
 * before a range is taken or a mark read or written, with the server's
 * message and exit status 2, and a fresh dir is bound by the first of them.
 * And the store commands create no `./data` of their own: without
 * --store/--state-dir (or their variables) they use the defaults only where
 * they exist, else refuse naming the flag and the variable.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, probePostgres } from '../contract/backends.js';
import { sequoia } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-cli-bind-'));
  dirs.push(d);
  return d;
}

function ok(args: string[], o: { cwd?: string } = {}): string {
  const r = sequoia(args, {}, o);
  expect(r.status, `sequoia ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

function maxIdOf(store: string, tag: string): string | undefined {
  const tags = JSON.parse(ok(['tag', 'list', '--json', '--store', store])) as { tag: string; maxId: string }[];
  return tags.find((t) => t.tag === tag)?.maxId;
}

const describePg = await describeWithService('PostgreSQL', probePostgres);

describePg('gen segment and fence keep a state dir to one store', () => {
  const tag = `bind_${process.pid}_${Date.now().toString(36)}`;

  it('gen segment on SQLite, then on PostgreSQL in the same dir: refused naming the store, no range of PostgreSQL taken', () => {
    const dir = tmp();
    const sqlite = `sqlite:${join(dir, 'ids.db')}`;
    const state = join(dir, 'state');
    ok(['tag', 'create', tag, '--step', '10', '--store', sqlite]);
    ok(['tag', 'create', tag, '--step', '10', '--store', POSTGRES_URL]);
    expect(ok(['gen', 'segment', '--tag', tag, '--count', '3', '--store', sqlite, '--state-dir', state]).trim().split('\n')).toEqual([
      '1',
      '2',
      '3',
    ]);
    const pgBefore = maxIdOf(POSTGRES_URL, tag);

    const r = sequoia(['gen', 'segment', '--tag', tag, '--store', POSTGRES_URL, '--state-dir', state]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/INVALID_ARGUMENT: this state dir \(.*\) belongs to store .*ids\.db, not to postgres:/);
    expect(r.stderr).not.toMatch(/STORE_ROLLBACK_DETECTED|restored/);
    expect(maxIdOf(POSTGRES_URL, tag)).toBe(pgBefore);

    // fence is refused the same way, and fences nothing.
    const f = sequoia(['fence', tag, '--to', '500', '--store', POSTGRES_URL, '--state-dir', state]);
    expect(f.status, f.stderr).toBe(2);
    expect(f.stderr).toMatch(/belongs to store .*ids\.db/);
    expect(maxIdOf(POSTGRES_URL, tag)).toBe(pgBefore);

    // Its own store still works in it.
    expect(ok(['gen', 'segment', '--tag', tag, '--store', sqlite, '--state-dir', state]).trim()).toBe('4');
  });

  it('a fresh dir is bound by the first fence: gen segment on another store is refused there', () => {
    const dir = tmp();
    const sqlite = `sqlite:${join(dir, 'ids.db')}`;
    const state = join(dir, 'state');
    ok(['tag', 'create', tag, '--step', '10', '--store', sqlite]);
    ok(['fence', tag, '--to', '100', '--store', sqlite, '--state-dir', state]);
    const pgBefore = maxIdOf(POSTGRES_URL, tag);
    const r = sequoia(['gen', 'segment', '--tag', tag, '--store', POSTGRES_URL, '--state-dir', state]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/belongs to store .*ids\.db/);
    expect(maxIdOf(POSTGRES_URL, tag)).toBe(pgBefore);
  });

  it('a store that cannot be reached does not bind a fresh dir', () => {
    const dir = tmp();
    const state = join(dir, 'state');
    const down = sequoia(['gen', 'segment', '--tag', tag, '--store', 'postgres://postgres@127.0.0.1:1/test', '--state-dir', state]);
    expect(down.status).toBe(1);
    const sqlite = `sqlite:${join(dir, 'ids.db')}`;
    ok(['tag', 'create', tag, '--store', sqlite]);
    expect(ok(['gen', 'segment', '--tag', tag, '--store', sqlite, '--state-dir', state]).trim()).toBe('1');
  });
});

describe('store commands without --store or --state-dir create no ./data', () => {
  const storeRefusal =
    /INVALID_ARGUMENT: no store given: name it with --store URL or SEQUOIA_STORE \(the default, sqlite:\.\/data\/sequoia\.db, is used only where it exists/;
  const stateRefusal = /INVALID_ARGUMENT: no state dir given: name the server's with --state-dir DIR or SEQUOIA_STATE_DIR/;

  it('fence, gen segment, migrate and tag commands in an empty directory: exit 2 naming the flag, nothing created', () => {
    const cwd = tmp();
    const store = `sqlite:${join(tmp(), 'ids.db')}`;
    ok(['tag', 'create', 'order', '--store', store]);
    const cases: [string[], RegExp][] = [
      [['fence', 'order', '--to', '100'], storeRefusal],
      [['gen', 'segment', '--tag', 'order'], storeRefusal],
      [['migrate', '--from', 'postgres://postgres@127.0.0.1:1/test?schema=leaf'], storeRefusal],
      [['tag', 'list'], storeRefusal],
      [['tag', 'create', 'x'], storeRefusal],
      // A store named, the state dir not: the marks would go to a ./data no server reads.
      [['fence', 'order', '--to', '100', '--store', store], stateRefusal],
      [['gen', 'segment', '--tag', 'order', '--store', store], stateRefusal],
    ];
    for (const [args, refusal] of cases) {
      const r = sequoia(args, {}, { cwd });
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(refusal);
      expect(readdirSync(cwd), args.join(' ')).toEqual([]);
    }
    // The variables name them as the flags do.
    const viaEnv = sequoia(['gen', 'segment', '--tag', 'order'], { SEQUOIA_STORE: store, SEQUOIA_STATE_DIR: join(cwd, 'marks') }, { cwd });
    expect(viaEnv.status, viaEnv.stderr).toBe(0);
    expect(viaEnv.stdout.trim()).toBe('1');
  });

  it("where ./data exists (a server's home, as after the Quick start), the defaults are used", () => {
    const cwd = tmp();
    mkdirSync(join(cwd, 'data'));
    // A state dir alone: the default store is still missing.
    expect(sequoia(['tag', 'list'], {}, { cwd }).stderr).toMatch(storeRefusal);
    const store = `sqlite:${join(tmp(), 'ids.db')}`;
    ok(['tag', 'create', 'order', '--store', store]);
    expect(ok(['gen', 'segment', '--tag', 'order', '--store', store], { cwd }).trim()).toBe('1');
    expect(existsSync(join(cwd, 'data', 'state.db'))).toBe(true);
    // The default store file present: tag commands and fence use it.
    writeFileSync(join(cwd, 'data', 'sequoia.db'), '');
    ok(['tag', 'create', 'invoice'], { cwd });
    expect(ok(['tag', 'list'], { cwd })).toMatch(/^invoice\t1\t/m);
  });
});
