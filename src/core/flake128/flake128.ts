/**
 * Boundary flake, 128 bits (https://github.com/boundary/flake):
 *
 *   | timestamp ms since 1970 (64) | worker (48, e.g. a MAC address) | sequence (16) |
 *
 * As bigint, or as 32 lowercase hex digits (which sort like the numbers).
 * The sequence restarts at 0 on each new millisecond. When 65,536 IDs were
 * issued in one ms, `next()` answers `{ retryAfterMs }` instead of an ID (the
 * core never sleeps; the caller waits). When the clock is behind the last
 * issued ms, `next()` throws ClockError (CLOCK_MOVED_BACKWARDS) with
 * `retryAfterMs` set to the gap: no (ms, worker, sequence) triple repeats.
 */
import { ClockError, InvalidArgumentError } from '../errors.js';
import type { Clock } from '../clock.js';
import { HEX_BYTES, decodeHex } from '../codecs/hex.js';

export const FLAKE128_MAX_WORKER = 2 ** 48 - 1;
export const FLAKE128_MAX_SEQUENCE = 0xffff;

export interface Flake128Options {
  clock: Clock;
  /** 0..2^48-1. */
  worker: number | bigint;
}

/** Answer when the sequence of the current ms is used up: call again after `retryAfterMs`. */
export interface RetryAfter {
  readonly retryAfterMs: number;
}

export interface Flake128Fields {
  readonly timestampMs: bigint;
  readonly worker: bigint;
  readonly sequence: number;
}

export function composeFlake128(fields: Flake128Fields): bigint {
  const { timestampMs, worker, sequence } = fields;
  if (timestampMs < 0n || timestampMs >= 1n << 64n) throw new InvalidArgumentError('timestampMs must fit 64 bits');
  if (worker < 0n || worker > BigInt(FLAKE128_MAX_WORKER)) throw new InvalidArgumentError('worker must fit 48 bits');
  if (!Number.isInteger(sequence) || sequence < 0 || sequence > FLAKE128_MAX_SEQUENCE) {
    throw new InvalidArgumentError('sequence must fit 16 bits');
  }
  return (timestampMs << 64n) | (worker << 16n) | BigInt(sequence);
}

export function decomposeFlake128(id: bigint): Flake128Fields {
  if (id < 0n || id >= 1n << 128n) throw new InvalidArgumentError('a 128-bit flake is from 0 to 2^128-1');
  return {
    timestampMs: id >> 64n,
    worker: (id >> 16n) & ((1n << 48n) - 1n),
    sequence: Number(id & 0xffffn),
  };
}

/** 32 lowercase hex digits. */
export function formatFlake128(id: bigint): string {
  if (id < 0n || id >= 1n << 128n) throw new InvalidArgumentError('a 128-bit flake is from 0 to 2^128-1');
  return id.toString(16).padStart(32, '0');
}

/** Parses 32 hex digits (any case). Throws INVALID_ARGUMENT. */
export function parseFlake128(text: string): bigint {
  return decodeHex(text, 32);
}

export class Flake128Generator {
  private readonly clock: Clock;
  /** Hex of the 48-bit worker + placeholder for the sequence. */
  private readonly workerHex: string;
  private readonly workerShifted: bigint;
  private lastMs = -1;
  private sequence = 0;

  constructor(options: Flake128Options) {
    const w = options.worker;
    const ok =
      typeof w === 'bigint' ? w >= 0n && w <= BigInt(FLAKE128_MAX_WORKER) : Number.isSafeInteger(w) && w >= 0 && w <= FLAKE128_MAX_WORKER;
    if (!ok) throw new InvalidArgumentError(`worker must be an integer from 0 to ${FLAKE128_MAX_WORKER}`);
    this.clock = options.clock;
    this.workerShifted = BigInt(w) << 16n;
    this.workerHex = BigInt(w).toString(16).padStart(12, '0');
  }

  /** Advances state; returns false when this ms is used up. */
  private advance(): boolean {
    const now = Math.floor(this.clock.now());
    if (!(now >= 0) || now > Number.MAX_SAFE_INTEGER) throw new ClockError(`clock returned ${now}, not a time since 1970`);
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
      return true;
    }
    if (now < this.lastMs) {
      throw new ClockError(`clock moved backwards by ${this.lastMs - now} ms`, { retryAfterMs: this.lastMs - now });
    }
    if (this.sequence >= FLAKE128_MAX_SEQUENCE) return false;
    this.sequence++;
    return true;
  }

  /** The next ID as a bigint, or `{ retryAfterMs }` when this ms's 65,536 sequences are used. */
  next(): bigint | RetryAfter {
    if (!this.advance()) return { retryAfterMs: 1 };
    return (BigInt(this.lastMs) << 64n) | this.workerShifted | BigInt(this.sequence);
  }

  /** The next ID as 32 hex digits, or `{ retryAfterMs }`. */
  nextHex(): string | RetryAfter {
    if (!this.advance()) return { retryAfterMs: 1 };
    const s = this.sequence;
    return this.lastMs.toString(16).padStart(16, '0') + this.workerHex + HEX_BYTES[s >>> 8]! + HEX_BYTES[s & 255]!;
  }
}
