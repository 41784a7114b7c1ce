/**
 * Whether an error from a database driver is a unique-key violation: the
 * conflict to report with `client.reportConflict`. Recognises, without
 * importing any driver:
 *   pg (node-postgres): SQLSTATE `code` 23505
 *   mysql2 / mysql: `code` ER_DUP_ENTRY or `errno` 1062
 *   better-sqlite3: `code` SQLITE_CONSTRAINT_UNIQUE or SQLITE_CONSTRAINT_PRIMARYKEY
 * A wrapped error (an ORM's, or `new Error(…, { cause })`) is recognised
 * through its `cause` or `originalError`/`parent`, up to a few levels.
 */
export function isUniqueViolation(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && typeof e === 'object' && e !== null; depth++) {
    const o = e as { code?: unknown; errno?: unknown; sqlState?: unknown; cause?: unknown; originalError?: unknown; parent?: unknown };
    if (o.code === '23505' || o.code === 'ER_DUP_ENTRY' || o.errno === 1062) return true;
    if (o.code === 'SQLITE_CONSTRAINT_UNIQUE' || o.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return true;
    e = o.cause ?? o.originalError ?? o.parent;
  }
  return false;
}
