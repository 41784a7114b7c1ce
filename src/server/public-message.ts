/**
 * What a client may read of an error message. Messages are written for the
 * operator and may name where things are: the state directory and its file
 * (`… in /var/lib/sequoia/state.db (SQLITE_FULL)`, `… kept in state dir
 * /var/lib/sequoia`), a ZooKeeper cache file, the host of a network store. The
 * log keeps the whole message; every error answer (JSON, Leaf's text, the
 * answers written below fastify) goes through this one function, so a client
 * never sees a file path or a store's host (docs/security.md).
 */
import { SequoiaError } from '../core/errors.js';

/** Where a file-system path starts: `/`, `C:\`, `./`, `../`, `~/`. */
const ROOT = String.raw`(?:[A-Za-z]:[\\/]|~[\\/]|\.{1,2}[\\/]|[\\/])`;
/** A path as one token (no blanks, brackets or quotes). */
const PATH = String.raw`${ROOT}[^\s()"'\`,;]+`;
/** Not inside a word, a URL or a route (`GET /v1/…` is the caller's own request, kept by the codes that name it). */
const START = String.raw`(?<![\w.:/\\~-])`;

/** `state dir PATH` (the rollback guard's `where`): the path runs to `)`, `;` or the end, blanks included. */
const STATE_DIR = new RegExp(String.raw`\bstate dir(?:ectory)? ${START}${ROOT}[^)\n;]*?(?=\)|;|$)`, 'g');
/** ` in PATH (CODE)` at the end (the state directory's write errors): the path runs to the code, blanks included. */
const IN_FILE = new RegExp(String.raw` in ${START}${ROOT}.*?(?= \([A-Z][A-Z0-9_]*\)$)`);
const LOCATED = new RegExp(String.raw` (?:in|at|from|of|under|to) ${START}${PATH}`, 'g');
/** A method and one of Sequoia's own routes (`POST /v1/tags`, as a hint names it) is no file. */
const ROUTE = String.raw`(?<=\b(?:GET|HEAD|POST|PUT|PATCH|DELETE) )/(?:v1|api)/`;
const ANY_PATH = new RegExp(`${START}(?!${ROUTE})${PATH}`, 'g');
/** storeError's ` at host:port[, database NAME]` (stores.ts `storeTarget`), and `Redis at host:port`. */
const STORE_HOST = / at (?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d+(?:, database [^\s:,)]+)?/g;

/** Codes whose message names the caller's own request path: kept as written. */
const ROUTE_CODES = new Set(['NOT_FOUND', 'METHOD_NOT_ALLOWED']);

/**
 * What a client reads of an error: its public message when it was made with its
 * where apart (`located`, core/errors.ts), else its message scrubbed below (the
 * messages not yet made that way: the SQLite and Redis stores', the rollback
 * guard's). Anything else a client is never told the text of.
 */
export function answerText(err: unknown, otherwise: string): string {
  if (!(err instanceof SequoiaError)) return otherwise;
  return err.operatorDetail !== undefined ? err.publicMessage : publicMessage(err.code, err.message);
}

/** The message as a client sees it: without file paths (and, for server-side faults, without a store's host). */
export function publicMessage(code: string, message: string): string {
  if (ROUTE_CODES.has(code)) return message;
  let m = message.replace(STATE_DIR, 'the state directory').replace(IN_FILE, '').replace(LOCATED, '').replace(ANY_PATH, '<path>');
  if (code !== 'INVALID_ARGUMENT') m = m.replace(STORE_HOST, '');
  return m;
}
