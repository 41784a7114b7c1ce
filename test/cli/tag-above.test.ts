/**
 * `sequoia tag create TAG --above URL --table T --column C [--margin N]`: the
 * path off AUTO_INCREMENT. On real PostgreSQL and MariaDB the tag starts at
 * MAX(C) + 1 + margin, and the command prints what it read; bad input is a
 * message and exit 2.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { uniqueName } from '../contract/backends.js';
import { sequoia } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { SQL_DATABASES } from '../helpers/sql-databases.js';

for (const db of SQL_DATABASES) {
  const describeDb = await describeWithService(db.service, db.probe);
  describeDb(`tag create --above: ${db.name}`, () => {
    it('starts above MAX(column) + margin, printing what it read', async () => {
      const table = uniqueName('orders');
      const store = `sqlite:${join(mkdtempSync(join(tmpdir(), 'sequoia-above-')), 'ids.db')}`;
      await db.exec(`CREATE TABLE ${table} (id BIGINT PRIMARY KEY, note VARCHAR(10))`);
      try {
        await db.exec(`INSERT INTO ${table} (id, note) VALUES (7, 'a'), (9007199254740993, 'b'), (41, 'c')`);
        const r = sequoia([
          'tag',
          'create',
          'orders',
          '--above',
          db.url,
          '--table',
          table,
          '--column',
          'id',
          '--margin',
          '10',
          '--store',
          store,
        ]);
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        expect(r.stdout).toContain(`read MAX(id) = 9007199254740993 of ${table}`);
        expect(r.stdout).toContain('starting at 9007199254741004');
        expect(r.stdout).not.toMatch(/root@|postgres@/);
        const list = sequoia(['tag', 'list', '--json', '--store', store]);
        expect((JSON.parse(list.stdout) as Array<{ tag: string; maxId: string }>).find((t) => t.tag === 'orders')?.maxId).toBe(
          '9007199254741004',
        );

        // an empty table: the margin above 0; default column id, default margin 1000
        await db.exec(`DELETE FROM ${table}`);
        const e = sequoia(['tag', 'create', 'empty', '--above', db.url, '--table', table, '--store', store]);
        expect(e.status).toBe(0);
        expect(e.stdout).toContain('the table is empty; starting at 1001');

        // bad input: message and exit 2, nothing created
        for (const [args, msg] of [
          [['--above', db.url, '--table', `${table}; drop table x`], /--table must be a plain name/],
          [['--above', db.url, '--table', table, '--column', 'id)'], /--column must be a plain name/],
          [['--above', db.url], /go with --above URL --table NAME/],
          [['--table', table], /go with --above URL --table NAME/],
          [['--above', db.url, '--table', table, '--start', '5'], /exclude each other/],
          [['--above', db.url, '--table', table, '--margin', '-1'], /--margin must be a whole number/],
          [['--above', 'redis://127.0.0.1:6379', '--table', table], /unsupported URL/],
        ] as Array<[string[], RegExp]>) {
          const b = sequoia(['tag', 'create', 'bad', ...args, '--store', store]);
          expect(b.status, args.join(' ')).toBe(2);
          expect(b.stderr).toMatch(msg);
        }
        const missing = sequoia(['tag', 'create', 'bad', '--above', db.url, '--table', `${table}_missing`, '--store', store]);
        expect(missing.status).not.toBe(0);
        expect(missing.stderr).toMatch(/STORE_UNAVAILABLE/);
        expect(sequoia(['tag', 'list', '--store', store]).stdout).not.toContain('bad');
      } finally {
        await db.exec(`DROP TABLE IF EXISTS ${table}`);
      }
    }, 120_000);
  });
}
