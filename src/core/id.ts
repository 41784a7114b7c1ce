/**
 * IDs are 63-bit non-negative integers. In TypeScript an ID is a `number` when
 * it is at most 2^53-1 (Number.MAX_SAFE_INTEGER) and a `bigint` above: the hot
 * path stays on doubles for the common case and nothing ever loses precision.
 */
export type Id = number | bigint;

export const MAX_ID = (1n << 63n) - 1n;

/** Where a new tag's first ID is unless its creation says otherwise (every store, and the advice on re-creating a name). */
export const DEFAULT_START = 1n;
export const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The canonical form of an ID value: a number when safe, a bigint otherwise. */
export function toId(v: bigint): Id {
  return v <= MAX_SAFE ? Number(v) : v;
}

export function idToBigInt(id: Id): bigint {
  return typeof id === 'bigint' ? id : BigInt(id);
}

const DECIMAL = /^(0|[1-9][0-9]{0,18})$/;

/**
 * Parses a decimal ID string strictly: no sign, exponent, fraction, spaces or
 * leading zeros, and at most 2^63-1. Returns undefined when it is not one.
 */
export function parseDecimalId(text: string): bigint | undefined {
  if (!DECIMAL.test(text)) return undefined;
  const v = BigInt(text);
  return v <= MAX_ID ? v : undefined;
}

/** Ranges in order of their first ID (as numbers): the one sort of the range ledger, in every store and the audit. */
export function byFirst(a: { readonly first: bigint }, b: { readonly first: bigint }): number {
  return a.first < b.first ? -1 : a.first > b.first ? 1 : 0;
}
