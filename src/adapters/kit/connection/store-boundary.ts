/**
 * What every store adapter shares at its boundary: driver errors become
 * STORE_UNAVAILABLE (the original kept as `cause`, the message naming only the
 * backend and the driver's error code, never SQL or credentials), and rows
 * with BIGINTs read as text become TagInfo without passing through a double.
 */
import { InvalidArgumentError, SequoiaError, UnavailableError, located } from '../../../core/errors.js';
import type { TagInfo } from '../../../ports/segment-store.js';

/**
 * Where a network store is, for messages: `host:port, database NAME` from its
 * URL (never the user or password), or undefined when the URL cannot be read.
 */
export function storeTarget(url: string | undefined, defaultPort: number): string | undefined {
  if (url === undefined) return undefined;
  try {
    const u = new URL(url);
    const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
    return `${u.hostname || 'localhost'}:${u.port || defaultPort}${db ? `, database ${db}` : ''}`;
  } catch {
    return undefined;
  }
}

/**
 * The server answers operators meet first, in words, with what to change
 * (PostgreSQL SQLSTATE, MySQL errno, Node's socket codes).
 */
const EXPLAINED: Record<string, string> = {
  '28000': 'authentication failed: the user in the store URL is not allowed (no such role, or pg_hba.conf refuses it)',
  '28P01': 'authentication failed: wrong password for the user in the store URL',
  '3D000': 'no such database: create it or fix the database in the store URL',
  '1045': 'authentication failed: access denied for the user in the store URL (check user and password)',
  // MariaDB's answer to the same mistake when no password was given (which one comes depends on the account lookup)
  '1698': 'authentication failed: access denied for the user in the store URL (check user and password)',
  '1049': 'no such database: create it or fix the database in the store URL',
  ECONNREFUSED: 'connection refused: nothing listens there (is the server running? check host and port in the store URL)',
  ENOTFOUND: 'host not found: check the host in the store URL',
  EAI_AGAIN: 'host not found (DNS lookup failed): check the host in the store URL',
  ETIMEDOUT: 'connection timed out: check host, port and firewalls',
};

/**
 * Turns any driver failure into STORE_UNAVAILABLE; SequoiaErrors pass through
 * unchanged. `target` (from `storeTarget`) names host, port and database.
 */
export function storeError(backend: string, e: unknown, target?: string): SequoiaError {
  if (e instanceof SequoiaError) return e;
  const err = e as { code?: unknown; errno?: unknown; address?: unknown; port?: unknown };
  const code = typeof err.code === 'string' ? err.code : e instanceof Error ? e.message : 'unknown';
  // mysql2 gives ER_ACCESS_DENIED_ERROR with errno 1045; pg gives the SQLSTATE as code.
  const key = typeof err.errno === 'number' && EXPLAINED[String(err.errno)] ? String(err.errno) : code;
  // Where: from the store's URL, else where a connection failure tried (host and port only, never credentials).
  const at =
    target ??
    (typeof err.address === 'string' && typeof err.port === 'number'
      ? `${err.address.includes(':') ? `[${err.address}]` : err.address}:${err.port}`
      : undefined);
  const explained = EXPLAINED[key];
  // The host and database are the operator's to read, not a client's: the answer says what failed, the log where.
  const say = (where: string | undefined) =>
    explained
      ? `${backend}${where ? ` at ${where}` : ''}: ${explained} (${key === code ? code : `${code} ${key}`})`
      : `${backend}${where ? ` at ${where}` : ''} error (${code})`;
  if (at === undefined) return new UnavailableError('STORE_UNAVAILABLE', say(undefined), { cause: e, retryAfterMs: 1000 });
  const { message, located: split } = located(say, at);
  return new UnavailableError('STORE_UNAVAILABLE', message, { cause: e, retryAfterMs: 1000, located: split });
}

/** A synchronous driver call (SQLite's): any failure of it as `storeError` makes it. */
export function storeCall<T>(backend: string, fn: () => T, target?: string): T {
  try {
    return fn();
  } catch (e) {
    throw storeError(backend, e, target);
  }
}

/** An asynchronous driver call (a statement, or taking a pooled connection): its failure as `storeError` makes it. */
export async function storeCallAsync<T>(backend: string, fn: () => Promise<T>, target?: string): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw storeError(backend, e, target);
  }
}

/** A sequoia_alloc row whose integers arrive as decimal text, numbers or bigints (SQLite's, whose `updated_at` is ms). */
export interface TextTagRow {
  tag: string;
  max_id: string | bigint;
  step: number | string | bigint;
  description: string;
  updated_at: Date | string | number | bigint;
  fence_epoch: number | string | bigint;
  /** Absent only on rows read by an older query; '0' (legacy) then. */
  generation?: string | number | bigint | null | undefined;
}

/**
 * A tag's max_id as the store holds it. A store whose values are text anyone
 * can write (Redis `HSET`) may hold one that is no integer: that is the
 * store's state, refused as STORE_UNAVAILABLE naming the tag and the value,
 * not a crash of the server (INTERNAL).
 */
export function storedMaxId(backend: string, tag: string, raw: string | number | bigint): bigint {
  if (typeof raw === 'bigint') return raw;
  const text = String(raw);
  if (!/^-?[0-9]{1,19}$/.test(text)) {
    throw new UnavailableError(
      'STORE_UNAVAILABLE',
      `the ${backend} holds max_id ${JSON.stringify(text.slice(0, 40))} for tag ${JSON.stringify(tag)}, which is not an integer (written by hand?): write the tag's real bound back, above every ID it handed out, then fence it`,
    );
  }
  return BigInt(text);
}

export function tagInfoFromTextRow(r: TextTagRow): TagInfo {
  return {
    tag: r.tag,
    maxId: BigInt(r.max_id),
    step: Number(r.step),
    description: r.description,
    updatedAt:
      r.updated_at instanceof Date ? r.updated_at : new Date(typeof r.updated_at === 'string' ? r.updated_at : Number(r.updated_at)),
    fenceEpoch: Number(r.fence_epoch),
    generation: r.generation === undefined || r.generation === null ? '0' : String(r.generation),
  };
}

/** A store option that must be a positive integer; the error names the field under `store`. */
export function positiveSetting(v: number, field: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new InvalidArgumentError(`store: ${field} must be a positive integer`);
  return v;
}
