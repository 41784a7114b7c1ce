/** The prefetch point, shared by the server's segment buffer and the client SDK's tag buffer (a module of its own: the client loads nothing else of the segment code). */
/** Fraction of a segment used before the next one is loaded (Leaf: 10%). */
export const PREFETCH_FRACTION = 0.1;

/**
 * How many IDs of a segment (or a client's batch) of `len` are used when the
 * next one starts loading: "more than 10% used", the first count above
 * len/10. The server's segment buffer and the client SDK's tag buffer both
 * prefetch at this point.
 */
export function prefetchAfter(len: number): number {
  return Math.floor(len * PREFETCH_FRACTION) + 1;
}
