/**
 * The SQL databases the tests run on for real (PostgreSQL, MariaDB/MySQL),
 * each with its probe and one way to run a statement as an admin would.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres } from '../contract/backends.js';

export interface SqlDatabase {
  readonly name: 'postgres' | 'mysql';
  /** The service as describeWithService names it when it is missing. */
  readonly service: string;
  readonly url: string;
  readonly probe: () => Promise<void>;
  /** Runs SQL (several statements allowed on MySQL) on a connection of its own. */
  readonly exec: (sql: string) => Promise<void>;
}

export const SQL_DATABASES: readonly SqlDatabase[] = [
  {
    name: 'postgres',
    service: 'PostgreSQL',
    url: POSTGRES_URL,
    probe: probePostgres,
    exec: async (sql) => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    },
  },
  {
    name: 'mysql',
    service: 'MariaDB/MySQL',
    url: MYSQL_URL,
    probe: probeMysql,
    exec: async (sql) => {
      const c = await mysql.createConnection({ uri: MYSQL_URL, multipleStatements: true });
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    },
  },
];
