/**
 * Sizes a layout from three peaks, as the seed article does: active issuing
 * nodes, IDs per node per ms at peak, and the years the format must last.
 *
 *   node bits     = ceil(log2 nodes)
 *   sequence bits = ceil(log2 (peak per ms × unit ms))
 *   time bits     = ceil(log2 (years in units))
 *
 * 256 nodes, 1,500/ms, 30 years → 8 + 11 + 40 bits, 60 with the sign bit.
 * Spare bits (up to 63) are reported: they can lengthen the lifetime or hold
 * a format version. Warnings say where IDs pass 2^53 (JavaScript numbers, many
 * JSON parsers) and when a plan needs unsigned 64-bit storage.
 */
import { InvalidArgumentError } from '../errors.js';

const YEAR_MS = 365.25 * 86_400_000;

export interface PlanInput {
  readonly nodes: number;
  readonly peakPerMs: number;
  readonly years: number;
  /** Milliseconds per tick. Default 1. */
  readonly unitMs?: number;
}

export interface Plan {
  readonly nodeBits: number;
  readonly sequenceBits: number;
  readonly timeBits: number;
  /** Sign bit + time + node + sequence. */
  readonly totalBits: number;
  /** 63 - (time + node + sequence); negative means the plan does not fit a signed 64-bit integer. */
  readonly spareBits: number;
  readonly unitMs: number;
  /** Years the time bits last, and with every spare bit given to time. */
  readonly lifetimeYears: number;
  readonly lifetimeYearsWithSpare: number;
  /** Largest ID's bit length (time + node + sequence). */
  readonly idBits: number;
  readonly sequencePerTick: number;
  readonly workers: number;
  readonly warnings: readonly string[];
}

function bitsFor(n: number): number {
  return n <= 1 ? 0 : Math.ceil(Math.log2(n) - 1e-12);
}

/**
 * @example
 * plan({ nodes: 256, peakPerMs: 1500, years: 30 }) // { nodeBits: 8, sequenceBits: 11, timeBits: 40, totalBits: 60, … }
 */
export function plan(input: PlanInput): Plan {
  const problems: string[] = [];
  const unitMs = input.unitMs ?? 1;
  const pos = (v: unknown, max: number) => typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= max;
  if (!pos(input.nodes, 2 ** 31) || !Number.isInteger(input.nodes)) problems.push('nodes must be an integer from 1 to 2147483648');
  if (!pos(input.peakPerMs, 2 ** 31)) problems.push('peak per ms must be a number above 0, at most 2147483648');
  if (!pos(input.years, 10_000)) problems.push('years must be a number above 0, at most 10000');
  if (!pos(unitMs, 86_400_000) || !Number.isInteger(unitMs)) problems.push('unit ms must be an integer from 1 to 86400000');
  if (problems.length) throw new InvalidArgumentError(problems.join('; '));
  const nodeBits = bitsFor(input.nodes);
  const sequenceBits = Math.max(1, bitsFor(Math.ceil(input.peakPerMs * unitMs)));
  const timeBits = Math.max(1, bitsFor(Math.ceil((input.years * YEAR_MS) / unitMs)));
  const idBits = timeBits + nodeBits + sequenceBits;
  const spareBits = 63 - idBits;
  const warnings: string[] = [];
  if (idBits > 64)
    warnings.push(`needs ${idBits} bits: does not fit 64 bits at all; lower the years, nodes or peak, or use a coarser time unit`);
  else if (idBits === 64) warnings.push('needs all 64 bits: store IDs as unsigned 64-bit (signed BIGINT and Java long go negative)');
  if (idBits > 53) {
    const years53 = (2 ** (53 - nodeBits - sequenceBits) * unitMs) / YEAR_MS;
    warnings.push(
      `IDs pass 2^53 after ${years53 < 0.01 ? 'the first moments' : `${years53.toFixed(2)} years`}: JavaScript numbers and many JSON parsers lose digits, so send them as strings`,
    );
  }
  return {
    nodeBits,
    sequenceBits,
    timeBits,
    totalBits: idBits + 1,
    spareBits,
    unitMs,
    lifetimeYears: (2 ** timeBits * unitMs) / YEAR_MS,
    lifetimeYearsWithSpare: (2 ** (timeBits + Math.max(0, spareBits)) * unitMs) / YEAR_MS,
    idBits,
    sequencePerTick: 2 ** sequenceBits,
    workers: 2 ** nodeBits,
    warnings,
  };
}
