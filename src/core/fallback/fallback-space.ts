/**
 * The fallback space of a segment tag (issue 22 §2, docs/operations.md
 * "Fallback space"): a reserved part of the tag's 64-bit ID space that a
 * client fills on its own when no server answers and its reserve is spent.
 *
 *   bit 63      0 (IDs stay positive signed 64-bit)
 *   bit 62      1 (every fallback ID is ≥ 2^62; the tag's segment IDs are
 *               held below 2^62, so the two can never meet)
 *   bits 61..21 41 bits of milliseconds since FALLBACK_EPOCH_MS (until 2094)
 *   bits 20..11 10 bits of worker id: a lease per tag, taken while servers answer
 *   bits 10..0  11 bits of sequence: 2,048 IDs per millisecond per client
 *
 * Two holders never share (ms, worker): a worker id has one live lease at a
 * time, a holder issues only milliseconds before its lease's end, and the next
 * holder of the id only milliseconds after it (its grant comes after that end).
 */
import { UnavailableError } from '../errors.js';

/** The first fallback ID; a fallback tag's segment IDs stay below it. */
export const FALLBACK_FLOOR = 1n << 62n;
/** 2025-01-01T00:00:00Z. */
export const FALLBACK_EPOCH_MS = 1_735_689_600_000;
export const FALLBACK_TIME_BITS = 41;
export const FALLBACK_WORKER_BITS = 10;
export const FALLBACK_SEQUENCE_BITS = 11;
/** Worker ids of one tag's fallback space: [0, FALLBACK_WORKERS). */
export const FALLBACK_WORKERS = 1 << FALLBACK_WORKER_BITS;
const SEQ_MAX = (1 << FALLBACK_SEQUENCE_BITS) - 1;
const TIME_MAX = 2 ** FALLBACK_TIME_BITS - 1;

/** The lease space (WorkerLeaseStore) that holds a tag's fallback worker ids. */
export function fallbackLeaseSpace(tag: string): string {
  return `fallback:${tag}`;
}

/** A fallback ID from a wall-clock millisecond, worker id and sequence. */
export function encodeFallbackId(ms: number, workerId: number, sequence: number): bigint {
  const t = ms - FALLBACK_EPOCH_MS;
  if (!Number.isInteger(t) || t < 0 || t > TIME_MAX)
    throw new UnavailableError('ID_SPACE_EXHAUSTED', `fallback time ${ms} is outside the fallback layout's 41 bits from 2025-01-01`);
  return FALLBACK_FLOOR | (BigInt(t) << 21n) | (BigInt(workerId) << 11n) | BigInt(sequence);
}

export interface FallbackFields {
  /** Wall-clock ms (the store's clock, as the issuing client estimated it). */
  readonly timestampMs: number;
  readonly workerId: number;
  readonly sequence: number;
}

/** The fields of a fallback ID, or undefined for an ID outside the fallback space (a segment ID, or not a positive 64-bit value). */
export function decodeFallbackId(id: bigint): FallbackFields | undefined {
  if (id < FALLBACK_FLOOR || id >= 1n << 63n) return undefined;
  return {
    timestampMs: Number((id >> 21n) & BigInt(TIME_MAX)) + FALLBACK_EPOCH_MS,
    workerId: Number((id >> 11n) & BigInt(FALLBACK_WORKERS - 1)),
    sequence: Number(id & BigInt(SEQ_MAX)),
  };
}

/** The first millisecond a lease ending at `expiresAtMs` no longer allows: a tenth of its length before its end, for clock drift and round trips. */
export function fallbackNotAfterMs(expiresAtMs: number, ttlMs: number): number {
  return expiresAtMs - Math.floor(ttlMs / 10);
}

/** One holding of a fallback worker id as the lease ledger keeps it (ports/lease-ledger.ts `LeaseHolding`). */
export interface FallbackHolding {
  readonly workerId: number;
  readonly fromTick: number;
  readonly untilTick: number;
  readonly released: boolean;
  /** Store-clock ms of the holding's first row (its grant) and last row (its last renewal or release). */
  readonly firstAtMs: number;
  readonly lastAtMs: number;
}

/**
 * The milliseconds (store clock) a holding allowed its client to issue
 * fallback IDs in, inclusive. Clients report their last millisecond only
 * when a server answers again, so the ledger's ticks alone would miss an
 * outage: the end comes from the last grant or renewal's time (each row is
 * written with the lease's new expiry, in the same transaction), unless the
 * client released the id, which it does after its last ID. The start is
 * the grant's time less the same margin the lease keeps at its end (a store
 * may date the row a little after the lease's own clock read): it still lies
 * after every millisecond the previous holder could issue, whose lease had
 * ended before this grant.
 */
export function fallbackHoldingSpan(
  h: FallbackHolding,
  ttlMs: number,
): { readonly workerId: number; readonly fromTick: number; readonly untilTick: number } {
  const fromTick = Math.max(h.fromTick, h.firstAtMs - Math.floor(ttlMs / 10));
  const untilTick = h.released ? h.untilTick : Math.max(h.untilTick, fallbackNotAfterMs(h.lastAtMs + ttlMs, ttlMs) - 1);
  return { workerId: h.workerId, fromTick, untilTick };
}

/**
 * What a lease allows, in the store's clock: a worker id, usable for
 * milliseconds in [notBeforeMs, notAfterMs).
 */
export interface FallbackGrant {
  readonly workerId: number;
  readonly notBeforeMs: number;
  readonly notAfterMs: number;
}

/**
 * Issues fallback IDs under one grant after another. `now` is the store's
 * clock as the client estimates it. Milliseconds never go back: a clock that
 * steps back keeps issuing on the last millisecond (then the next ones),
 * which is safe because every millisecond stays below the grant's end.
 * Answers undefined when the grant's end is reached: the caller refuses.
 */
export class FallbackIssuer {
  private grant: FallbackGrant | undefined;
  private lastMs = -1;
  private seq = 0;

  constructor(private readonly now: () => number) {}

  /** A new or renewed lease. A new worker id starts a fresh (ms, sequence) space. */
  setGrant(g: FallbackGrant | undefined): void {
    if (g !== undefined && this.grant !== undefined && g.workerId !== this.grant.workerId) {
      this.lastMs = -1;
      this.seq = 0;
    }
    this.grant = g;
  }

  get current(): FallbackGrant | undefined {
    return this.grant;
  }

  /** The last millisecond issued (-1: none), reported as the lease's last tick. */
  get lastTick(): number {
    return this.lastMs;
  }

  next(): bigint | undefined {
    const g = this.grant;
    if (g === undefined) return undefined;
    let ms = Math.max(Math.floor(this.now()), g.notBeforeMs, this.lastMs);
    let seq = 0;
    if (ms === this.lastMs) {
      if (this.seq < SEQ_MAX) seq = this.seq + 1;
      else ms++;
    }
    if (ms >= g.notAfterMs) return undefined;
    this.lastMs = ms;
    this.seq = seq;
    return encodeFallbackId(ms, g.workerId, seq);
  }
}
