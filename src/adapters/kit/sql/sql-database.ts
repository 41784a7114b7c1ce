/**
 * How the SQL stores run statements, whatever the database: one statement's
 * answer (`SqlAnswer`), a pool and its transactions (`SqlPool`: PostgreSQL,
 * MySQL), and a transaction written once as steps (`Steps`) that a pool runs
 * awaiting each statement and SQLite runs synchronously inside
 * `BEGIN IMMEDIATE`. Statements number their values `$1`, `$2`…
 * (PostgreSQL's own form); `positional` turns them into the `?` of MySQL and
 * SQLite.
 */

/** One statement's answer: a SELECT's rows (a write has none) and the rows it found or matched. */
export interface SqlAnswer {
  readonly rows: readonly unknown[];
  readonly count: number;
}

/** Runs one statement on the caller's connection (inside its transaction). */
export type RunSql = (sql: string, values?: unknown[]) => Promise<SqlAnswer>;

/** A store's pool (PostgreSQL, MySQL), as the stores on it use it. */
export interface SqlPool {
  /** The store, as errors name it: `MySQL Leaf store`. */
  readonly backend: string;
  /** One statement on its own. */
  run(sql: string, values?: unknown[]): Promise<SqlAnswer>;
  /** `fn` in one transaction on one connection, rolled back on any failure; `readCommitted`: each statement sees the latest commits. */
  transaction<T>(fn: (run: RunSql) => Promise<T>, readCommitted?: boolean): Promise<T>;
  /** `fn` where the store checks and makes its schema, one process at a time (under the database's lock). */
  migration<T>(fn: (run: RunSql) => Promise<T>): Promise<T>;
  /** Statements in one transaction sent in one round trip, where the database can (MySQL): the last one's rows. */
  script?(sql: readonly string[], values: unknown[]): Promise<readonly unknown[]>;
  release(): Promise<void>;
}

/** One statement to run and its values. */
export type Statement = readonly [sql: string, values?: unknown[]];

/** A transaction as steps: each yields a statement and gets its answer back; the generator's return is the transaction's. */
export type Steps<T> = Generator<Statement, T, SqlAnswer>;

/** What the SQL segment store (kit/sql/sql-segment-store.ts) runs on. */
export interface SqlDatabase {
  run(sql: string, values?: unknown[]): Promise<SqlAnswer>;
  /** Statements in one transaction, in one round trip where the database can send them so: the last one's rows. */
  script(sql: readonly string[], values: unknown[]): Promise<readonly unknown[]>;
  /** The steps in one transaction. */
  transaction<T>(steps: () => Steps<T>): Promise<T>;
  /** The steps where the schema is made, one process at a time; `steps` may run again (SQLite: on a file put in place of the open one). */
  migration(steps: () => Steps<void>): Promise<void>;
  release(): Promise<void>;
}

/** Runs the steps on an asynchronous connection. */
export async function runSteps<T>(steps: Steps<T>, run: RunSql): Promise<T> {
  let next = steps.next();
  while (!next.done) next = steps.next(await run(...next.value));
  return next.value;
}

/** A pool as the SQL segment store's database. */
export function overPool(pool: SqlPool): SqlDatabase {
  return {
    run: (sql, values) => pool.run(sql, values),
    script: async (sql, values) => {
      if (pool.script) return pool.script(sql, values);
      if (sql.length === 1) return (await pool.run(sql[0] as string, values)).rows;
      return pool.transaction(async (run) => {
        let rows: readonly unknown[] = [];
        for (const s of sql) rows = (await run(s, values)).rows;
        return rows;
      });
    },
    transaction: (steps) => pool.transaction((run) => runSteps(steps(), run)),
    migration: (steps) => pool.migration((run) => runSteps(steps(), run)),
    release: () => pool.release(),
  };
}

const POSITIONAL = new Map<string, { readonly text: string; readonly order: readonly number[] }>();

/** `$n` placeholders as `?` and the values in their order (repeated where a value is used twice); text without them passes as it is. */
export function positional(sql: string, values: readonly unknown[] = []): [string, unknown[]] {
  let p = POSITIONAL.get(sql);
  if (!p) {
    const order: number[] = [];
    p = { text: sql.replace(/\$(\d+)/g, (_, n: string) => (order.push(Number(n) - 1), '?')), order };
    POSITIONAL.set(sql, p);
  }
  return [p.text, p.order.length === 0 ? [...values] : p.order.map((i) => values[i])];
}
