/**
 * What every store adapter shares at its boundary: driver errors become
 * STORE_UNAVAILABLE (the original kept as `cause`, the message naming only the
 * backend and the driver's error code, never SQL or credentials), and rows
 * with BIGINTs read as text become TagInfo without passing through a double.
 */
import { InvalidArgumentError, SequoiaError, UnavailableError } from '../core/errors.js';
import type { TagInfo } from '../ports/segment-store.js';

/** Turns any driver failure into STORE_UNAVAILABLE; SequoiaErrors pass through unchanged. */
export function storeError(backend: string, e: unknown): SequoiaError {
  if (e instanceof SequoiaError) return e;
  const code = (e as { code?: string }).code ?? (e instanceof Error ? e.message : 'unknown');
  // A connection failure names where it tried (host and port only, never credentials).
  const { address, port } = e as { address?: unknown; port?: unknown };
  const where = typeof address === 'string' && typeof port === 'number' ? ` at ${address.includes(':') ? `[${address}]` : address}:${port}` : '';
  return new UnavailableError('STORE_UNAVAILABLE', `${backend} error${where} (${code})`, { cause: e, retryAfterMs: 1000 });
}

/** A sequoia_alloc row whose integers arrive as decimal text or numbers. */
export interface TextTagRow {
  tag: string;
  max_id: string;
  step: number | string;
  description: string;
  updated_at: Date | string;
  fence_epoch: number | string;
}

export function tagInfoFromTextRow(r: TextTagRow): TagInfo {
  return {
    tag: r.tag,
    maxId: BigInt(r.max_id),
    step: Number(r.step),
    description: r.description,
    updatedAt: r.updated_at instanceof Date ? r.updated_at : new Date(r.updated_at),
    fenceEpoch: Number(r.fence_epoch),
  };
}

/** A store option that must be a positive integer; the error names the field under `store`. */
export function positiveSetting(v: number, field: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new InvalidArgumentError(`store: ${field} must be a positive integer`);
  return v;
}
