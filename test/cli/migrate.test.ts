/**
 * `sequoia migrate --from URL --store URL [--margin N] [--tag T] [--dry-run]`:
 * on real PostgreSQL and MariaDB, the tags of a Leaf and a Tinyid table are
 * copied into a SQLite store a margin above the old next ID; a dry run
 * changes nothing; a second run changes nothing; a run after the old table
 * moved on raises (fences) the copy; bad input is a message and exit 2.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { lockServer } from '../../src/adapters/state-dir/server-lock.js';
import { StateDir } from '../../src/adapters/state-dir/state-dir.js';
import { uniqueName } from '../contract/backends.js';
import { sequoia } from '../helpers/cli.js';
import { LEAF, peerStoreUrl, TINYID } from '../helpers/peer-schemas.js';
import { describeWithService } from '../helpers/services.js';
import { SQL_DATABASES } from '../helpers/sql-databases.js';
import { tinyidRowSql } from '../helpers/tinyid-standin.js';

function tagsOf(store: string): Map<string, { maxId: string; step: number; fenceEpoch: number }> {
  const r = sequoia(['tag', 'list', '--json', '--store', store]);
  expect(r.status).toBe(0);
  return new Map((JSON.parse(r.stdout) as Array<{ tag: string; maxId: string; step: number; fenceEpoch: number }>).map((t) => [t.tag, t]));
}

for (const db of SQL_DATABASES) {
  const describeDb = await describeWithService(db.service, db.probe);
  describeDb(`sequoia migrate: ${db.name}`, () => {
    it('copies a Leaf table a margin above max_id; dry run and re-run change nothing; with --keep-source a later run raises', async () => {
      const table = uniqueName('t_leaf_alloc');
      const side = uniqueName('sq_side');
      const from = peerStoreUrl(db.url, LEAF, { table, side });
      const store = `sqlite:${join(mkdtempSync(join(tmpdir(), 'sequoia-migrate-')), 'ids.db')}`;
      await db.exec(LEAF.ddl(db.name, table, { binary: true }));
      try {
        await db.exec(
          `INSERT INTO ${table} (biz_tag, max_id, step, description) VALUES ('order:pay', 9007199254740993, 2000, 'pay'), ('user', 1, 1000, NULL)`,
        );
        // --keep-source: the rows stay where old servers find them (the default retires them: migrate-forgotten-server.test.ts)
        const keep = ['--margin', '500', '--keep-source'];
        const dry = sequoia(['migrate', '--from', from, '--store', store, ...keep, '--dry-run']);
        expect(dry.stderr).toBe('');
        expect(dry.status).toBe(0);
        expect(dry.stdout).toContain('order:pay: source next ID 9007199254740993, step 2000; would create at 9007199254741493');
        expect(dry.stdout).toContain('user: source next ID 1, step 1000; would create at 501');
        expect(dry.stdout).not.toMatch(/root@|postgres@/);
        expect(tagsOf(store).size).toBe(0);

        const run = sequoia(['migrate', '--from', from, '--store', store, ...keep]);
        expect(run.status).toBe(0);
        expect(run.stdout).toContain('source row kept (--keep-source');
        expect(run.stdout).toContain('created at 9007199254741493');
        let tags = tagsOf(store);
        expect(tags.get('order:pay')).toMatchObject({ maxId: '9007199254741493', step: 2000 });
        expect(tags.get('user')).toMatchObject({ maxId: '501', step: 1000 });

        const again = sequoia(['migrate', '--from', from, '--store', store, ...keep]);
        expect(again.status).toBe(0);
        expect(again.stdout).toContain('user: source next ID 1, step 1000; target already at 501 >= 501, unchanged');
        expect(tagsOf(store).get('user')?.maxId).toBe('501');

        // an old server allocated since: the copy is fenced up (never down), only the tag asked for
        await db.exec(`UPDATE ${table} SET max_id = max_id + 5000 WHERE biz_tag = 'user'`);
        const later = sequoia(['migrate', '--from', from, '--store', store, ...keep, '--tag', 'user', '--json']);
        expect(later.status).toBe(0);
        expect(JSON.parse(later.stdout)).toEqual([
          {
            tag: 'user',
            sourceNext: '5001',
            step: 1000,
            bound: '5501',
            action: 'raise',
            targetBefore: '501',
            targetAfter: '5501',
            source: 'keep',
            retiredAs: null,
            movedFrom: null,
            markFloor: null,
          },
        ]);
        tags = tagsOf(store);
        expect(tags.get('user')).toMatchObject({ maxId: '5501', fenceEpoch: 1 });
      } finally {
        await db.exec(`DROP TABLE IF EXISTS ${table}`);
        await db.exec(`DROP TABLE IF EXISTS ${side}`);
      }
    });

    it('--state-dir of a third store, missing, or in use by a server: refused before the source row is touched', async () => {
      const table = uniqueName('t_leaf_alloc');
      const side = uniqueName('sq_side');
      const from = peerStoreUrl(db.url, LEAF, { table, side });
      const base = mkdtempSync(join(tmpdir(), 'sequoia-migrate-'));
      const store = `sqlite:${join(base, 'ids.db')}`;
      await db.exec(LEAF.ddl(db.name, table, { binary: true }));
      try {
        await db.exec(`INSERT INTO ${table} (biz_tag, max_id, step, description) VALUES ('user', 1, 1000, NULL)`);
        const third = join(base, 'third');
        const state = new StateDir(third);
        await state.bindStore(`sqlite:${join(base, 'elsewhere.db')}`, true);
        await state.close();
        const busy = join(base, 'busy');
        await new StateDir(busy).close();
        const lock = lockServer(busy, store);
        try {
          const cases: Array<[string, number, RegExp]> = [
            [third, 2, /belongs to store sqlite:.*elsewhere\.db, neither --from/],
            [join(base, 'typo'), 2, /no state dir there/],
            [busy, 1, /in use by another server/],
          ];
          for (const [dir, status, message] of cases) {
            const r = sequoia(['migrate', '--from', from, '--store', store, '--state-dir', dir]);
            expect(r.status, dir).toBe(status);
            expect(r.stderr).toMatch(message);
          }
        } finally {
          lock.release();
        }
        expect(existsSync(join(base, 'typo'))).toBe(false);
        // the row is still Leaf's, under its own name; the copy has nothing
        expect([...tagsOf(from).keys()]).toEqual(['user']);
        expect(tagsOf(store).size).toBe(0);
      } finally {
        await db.exec(`DROP TABLE IF EXISTS ${table}`);
        await db.exec(`DROP TABLE IF EXISTS ${side}`);
      }
    });

    it('copies a Tinyid table above its next ID (max_id is the last ID taken), default margin 1,000,000', async () => {
      const table = uniqueName('t_tiny_id_info');
      const side = uniqueName('sq_tside');
      const from = peerStoreUrl(db.url, TINYID, { table, side });
      const store = `sqlite:${join(mkdtempSync(join(tmpdir(), 'sequoia-migrate-')), 'ids.db')}`;
      await db.exec(TINYID.ddl(db.name, table, { binary: true }));
      try {
        await db.exec(tinyidRowSql(table, { bizType: 'test', maxId: 100000n, step: 100000 }));
        await db.exec(tinyidRowSql(table, { bizType: 'test_odd', maxId: 200001n, step: 100000, delta: 2, remainder: 1 }));
        const run = sequoia(['migrate', '--from', from, '--store', store]);
        expect(run.stderr).toBe('');
        expect(run.status).toBe(0);
        const tags = tagsOf(store);
        expect(tags.get('test')).toMatchObject({ maxId: String(100001 + 1_000_000), step: 100000 });
        // delta 2, remainder 1: the next ID of the class above 200001 is 200003; a step of 100000 numbers is 50000 IDs
        expect(tags.get('test_odd')).toMatchObject({ maxId: String(200003 + 1_000_000), step: 50000 });
      } finally {
        await db.exec(`DROP TABLE IF EXISTS ${table}`);
        await db.exec(`DROP TABLE IF EXISTS ${side}`);
      }
    });
  });
}

it('bad input: a message and exit 2, nothing written', () => {
  const store = `sqlite:${join(mkdtempSync(join(tmpdir(), 'sequoia-migrate-')), 'ids.db')}`;
  const cases: Array<[string[], RegExp]> = [
    [['migrate', '--store', store], /required option '--from <url>'/],
    [['migrate', '--from', 'postgres://postgres@127.0.0.1:5432/test', '--store', store], /--from must name a Leaf or Tinyid table/],
    [['migrate', '--from', 'not a url', '--store', store], /--from must name a Leaf or Tinyid table/],
    // Not SQL: before, taken for a Sequoia store of its own ("the source table has no tags", exit 0; a file named `x?schema=leaf`)
    [['migrate', '--from', `sqlite:${store.slice(7)}-old?schema=leaf`, '--store', store], /--from must name a Leaf or Tinyid table/],
    [['migrate', '--from', 'redis://127.0.0.1:6379?schema=tinyid', '--store', store], /--from must name a Leaf or Tinyid table/],
    [
      ['migrate', '--from', 'postgres://u:secret@127.0.0.1:5432/test?schema=leaf', '--store', store, '--margin', '-1'],
      /--margin must be a whole number/,
    ],
    [['migrate', '--from', 'postgres://u:secret@127.0.0.1:5432/test?schema=leaf', '--store', store, '--tag', 'bad tag'], /--tag/],
    [
      [
        'migrate',
        '--from',
        'mysql://u:secret@127.0.0.1:3306/test?schema=tinyid',
        '--store',
        'mysql://u:secret@127.0.0.1:3306/test?schema=tinyid',
      ],
      /same table/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = sequoia(args);
    expect(r.status, args.join(' ')).toBe(2);
    expect(r.stderr, args.join(' ')).toMatch(message);
    expect(r.stderr).not.toContain('secret');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }
  expect(existsSync(`${store.slice(7)}-old?schema=leaf`)).toBe(false);
});
