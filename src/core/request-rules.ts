/**
 * Request limits and parameter rules, one home for every side that applies
 * them: the HTTP routes, the fast path, the services, the client SDK (which
 * splits larger batches) and the CLI.
 */
import { InvalidArgumentError } from './errors.js';
import type { Id } from './id.js';

/** Most IDs one request may ask for. */
export const MAX_COUNT = 10_000;

const COUNT_TEXT = /^[1-9][0-9]{0,4}$/;

/** A count given as text (a query parameter): 1..MAX_COUNT, else undefined. */
export function countFromText(raw: string): number | undefined {
  if (!COUNT_TEXT.test(raw)) return undefined;
  const n = Number(raw);
  return n <= MAX_COUNT ? n : undefined;
}

/** The `count` query parameter: 1 when absent; INVALID_ARGUMENT unless 1..MAX_COUNT as plain decimal text. */
export function parseCount(raw: unknown): number {
  if (raw === undefined) return 1;
  const n = typeof raw === 'string' ? countFromText(raw) : undefined;
  if (n === undefined) throw new InvalidArgumentError(`count must be an integer from 1 to ${MAX_COUNT}`);
  return n;
}

/** Throws unless `count` is an integer from 1 to MAX_COUNT (for callers holding a number). */
export function assertCount(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_COUNT) throw new InvalidArgumentError(`count must be an integer from 1 to ${MAX_COUNT}`);
  return count;
}

/** The body of a segment batch, `{"tag":…,"ids":["…",…]}`: IDs as decimal strings, written by hand on the hot path. */
export function idsJson(tag: string, ids: readonly Id[]): string {
  return `{"tag":${JSON.stringify(tag)},"ids":["${ids.join('","')}"]}`;
}
