/**
 * The first hour of a new user: start-up failures are one line on stderr with
 * a code and what to change, never a stack trace. A port in use fails before
 * the store is opened or a snowflake worker id is leased (bind first), once
 * even with two workers; store errors name host, port and database and say
 * what PostgreSQL 28000/3D000 and MySQL 1045/1049 mean. Real stores.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, assertBuilt, cleanEnv } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { SQL_DATABASES } from '../helpers/sql-databases.js';

function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  assertBuilt();
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: cleanEnv(), timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const suffix = Math.random().toString(36).slice(2, 8);

describe('a port in use', () => {
  let holder: Server;
  let port = 0;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((r) => holder.listen({ host: '127.0.0.1', port: 0 }, r));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => holder.close(() => r())));

  for (const workers of ['1', '2']) {
    it(`--workers ${workers}: one line naming --port, before the store is opened or a worker id leased`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-port-'));
      const r = run([
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--workers',
        workers,
        '--store',
        `sqlite:${join(dir, 'ids.db')}`,
        '--state-dir',
        join(dir, 'state'),
      ]);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        `sequoia: EADDRINUSE: cannot listen on 127.0.0.1:${port}: the port is in use (another server?); choose another with --port (env SEQUOIA_PORT)\n`,
      );
      expect(r.stdout).not.toMatch(/worker id acquired/);
      // nothing was opened: no database file, no state
      expect(readdirSync(dir)).toEqual([]);
      expect(existsSync(join(dir, 'ids.db'))).toBe(false);
    });
  }

  it('a host that is not local names --host', () => {
    const r = run([
      'serve',
      '--host',
      '192.0.2.1',
      '--port',
      '0',
      '--workers',
      '1',
      // beyond loopback a server wants an admin token first (docs/security.md): given one, the address is judged
      '--admin-token',
      'startup-errors-admin-token-0123456789',
      '--store',
      `sqlite:${join(mkdtempSync(join(tmpdir(), 'sequoia-host-')), 'ids.db')}`,
    ]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /^sequoia: EADDRNOTAVAIL: cannot listen on 192\.0\.2\.1:0: no such local address; choose another with --host \(env SEQUOIA_HOST\)\n$/,
    );
  });
});

function withDb(url: string, db: string, user?: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  if (user !== undefined) {
    u.username = user;
    u.password = '';
  }
  return u.toString();
}

/** What each database answers for a missing database and for a user it refuses, as the one stderr line says it. */
const STORE_ERRORS = {
  postgres: {
    title: 'PostgreSQL',
    port: '5432',
    noDatabase: { name: '3D000: no such database, naming host, port and database', code: '3D000' },
    refused: { name: '28000: a role the server refuses', message: 'authentication failed: .*', codes: '(28000|28P01)' },
  },
  // MariaDB answers 1045 or, for a user given without a password, sometimes 1698: both mean the same here
  mysql: {
    title: 'MySQL',
    port: '3306',
    noDatabase: { name: '1049: no such database', code: 'ER_BAD_DB_ERROR 1049' },
    refused: {
      name: '1045: access denied',
      message: 'authentication failed: access denied for the user in the store URL \\(check user and password\\)',
      codes: '(ER_ACCESS_DENIED_ERROR 1045|ER_ACCESS_DENIED_NO_PASSWORD_ERROR 1698)',
    },
  },
} as const;

for (const store of SQL_DATABASES) {
  const e = STORE_ERRORS[store.name];
  const describeStore = await describeWithService(store.service, store.probe);
  describeStore(`${e.title} start-up errors`, () => {
    const u = new URL(store.url);
    const at = `${u.hostname}:${u.port || e.port}`;
    it(e.noDatabase.name, () => {
      const db = `nope_${suffix}`;
      const r = run([
        'serve',
        '--port',
        '0',
        '--workers',
        '1',
        '--store',
        withDb(store.url, db),
        '--state-dir',
        mkdtempSync(join(tmpdir(), `sequoia-${store.name}-`)),
      ]);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        `sequoia: STORE_UNAVAILABLE: ${e.title} store at ${at}, database ${db}: no such database: create it or fix the database in the store URL (${e.noDatabase.code})\n`,
      );
    });
    it(e.refused.name, () => {
      const r = run([
        'tag',
        'list',
        '--store',
        withDb(store.url, 'test', `nobody_${suffix}`),
        '--state-dir',
        mkdtempSync(join(tmpdir(), `sequoia-${store.name}-`)),
      ]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^sequoia: STORE_UNAVAILABLE: ${e.title} store at ${at}, database test: ${e.refused.message} \\(${e.refused.codes}\\)\\n$`,
        ),
      );
      expect(r.stderr).not.toContain(`nobody_${suffix}`);
    });
  });
}
