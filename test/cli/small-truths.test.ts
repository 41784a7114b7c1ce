/**
 * Small truths a new user meets in the first hour (built CLI, real SQLite):
 * `gen` lists every kind it takes; `explain` names its fields the same way
 * for every kind; `tag list` calls the store's max_id MAX_ID; refusals from
 * the CLI name the CLI's own state dir, not "this server".
 */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBusinessNumberCodec } from '../../src/core/business-number/index.js';
import { sequoia } from '../helpers/cli.js';

describe('sequoia gen', () => {
  it('an unknown kind lists every kind, snowflake and segment included', () => {
    const r = sequoia(['gen', 'wat']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'sequoia: INVALID_ARGUMENT: kind must be one of snowflake, segment, daily, uuid, uuid4, ulid, objectid, typeid (got "wat")\n',
    );
  });

  it('--shard follows the same rule as the HTTP shard parameter (core/request-rules.ts)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-shard-'));
    const gen = (...args: string[]) =>
      sequoia(['gen', 'snowflake', '--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', dir, ...args]);
    const cases: Array<[string[], string]> = [
      [['--layout', 'instagram'], 'layout instagram needs --shard from 0 to 8191'],
      [['--layout', 'instagram', '--shard', '8192'], 'shard must be an integer from 0 to 8191'],
      [['--layout', 'instagram', '--shard', '01'], 'shard must be an integer from 0 to 8191'],
      [['--layout', 'twitter', '--shard', '1'], 'layout twitter has no shard field'],
    ];
    for (const [args, message] of cases) {
      const r = gen(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toBe(`sequoia: INVALID_ARGUMENT: ${message}\n`);
    }
    const ok = gen('--layout', 'instagram', '--shard', '8191');
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^[0-9]+\n$/);
  });
});

describe('sequoia explain', () => {
  it('every kind answers id and kind first, and layout where there is one', () => {
    const outputs = [
      sequoia(['explain', sequoia(['gen', 'uuid']).stdout.trim()]),
      sequoia(['explain', sequoia(['gen', 'ulid']).stdout.trim()]),
      sequoia(['explain', sequoia(['gen', 'objectid']).stdout.trim()]),
      sequoia(['explain', '1541815603606036480', '--layout', 'twitter']),
      sequoia(['explain', createBusinessNumberCodec({ kind: 'base62' }).encode(42n), '--format', 'base62']),
    ].map((r) => {
      expect(r.stderr).toBe('');
      return JSON.parse(r.stdout) as Record<string, unknown>;
    });
    expect(outputs.map((o) => Object.keys(o).slice(0, 2))).toEqual(Array(5).fill(['id', 'kind']));
    expect(outputs.map((o) => o.kind)).toEqual(['uuid', 'ulid', 'objectid', 'snowflake', 'business-number']);
    expect(outputs[3]).toMatchObject({ layout: 'twitter', time: '2022-06-28T16:07:40.105Z', datacenter: 11, worker: 26, sequence: 0 }); // (id >> 22) + twitter epoch; (id >> 17) & 31; (id >> 12) & 31
    expect(outputs.filter((o) => 'layout' in o).map((o) => o.kind)).toEqual(['snowflake']);
    expect(outputs[0]).toMatchObject({ version: 7 });
    expect(outputs[0]).not.toHaveProperty('text');
  });
});

describe('tags and fences from the CLI', () => {
  it('tag list calls max_id MAX_ID', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-truths-'));
    const env = { SEQUOIA_STORE: `sqlite:${join(dir, 'ids.db')}`, SEQUOIA_STATE_DIR: join(dir, 'state') };
    expect(sequoia(['tag', 'create', 'order', '--start', '7'], env).status).toBe(0);
    expect(sequoia(['tag', 'list'], env).stdout).toBe('TAG\tMAX_ID\tSTEP\tDESCRIPTION\norder\t7\t1000\t\n');
  });

  it("a fence below the CLI's high-water mark, and a rolled-back store, name the CLI's state dir", () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-truths-'));
    const state = join(dir, 'cli-state');
    const env = { SEQUOIA_STORE: `sqlite:${join(dir, 'ids.db')}`, SEQUOIA_STATE_DIR: state };
    expect(sequoia(['tag', 'create', 't', '--step', '100'], env).status).toBe(0);
    expect(sequoia(['gen', 'segment', '--tag', 't', '--count', '3'], env).stdout).toBe('1\n2\n3\n');
    const fence = sequoia(['fence', 't', '--to', '2'], env);
    expect(fence.status).toBe(2);
    expect(fence.stderr).toBe(
      `sequoia: INVALID_ARGUMENT: to must be at least 4: IDs up to 3 were handed out (high-water mark 4 in state dir ${state})\n`,
    );
    // the store restored from a snapshot taken before those IDs
    const db = new Database(join(dir, 'ids.db'));
    db.prepare("UPDATE sequoia_alloc SET max_id = 1 WHERE tag = 't'").run();
    db.close();
    const again = sequoia(['gen', 'segment', '--tag', 't'], env);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^sequoia: STORE_ROLLBACK_DETECTED: /);
    expect(again.stderr).toContain(`below the high-water mark 4 kept in state dir ${state}`);
    expect(again.stderr).not.toContain('this server');
  });
});
