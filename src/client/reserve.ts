/**
 * The client's reserve for one segment tag (issue 22, DESIGN.md
 * "Degradation"): IDs taken from the servers like any batch (so no other
 * caller, client or server can ever hold them), kept aside and handed out
 * ONLY while no server answers. When it is spent the client refuses with
 * RESERVE_EXHAUSTED: creation pauses, nothing is invented.
 *
 * The pure parts live here (unit-tested in reserve.test.ts): the range set
 * that holds the reserve, the sizing rule, and which failures count as "no
 * server answered".
 */
import { type SequoiaError, UnavailableError } from '../core/errors.js';

/**
 * A set of IDs kept as runs of consecutive values `[first, last]`: a batch
 * the server answered is usually one run (two bigints), or a few when it
 * spans the server's segments. IDs leave from the front, each at most once.
 */
export class RangeSet {
  private readonly runs: Array<{ next: bigint; last: bigint }> = [];
  private count = 0;

  /** IDs left. */
  get size(): number {
    return this.count;
  }

  /** Runs held (memory: two bigints each). */
  get runCount(): number {
    return this.runs.length;
  }

  /** Adds a batch as answered by a server (any order; consecutive IDs become one run). */
  addIds(ids: readonly bigint[]): void {
    for (const id of ids) {
      const tail = this.runs.at(-1);
      if (tail !== undefined && tail.last + 1n === id) tail.last = id;
      else this.runs.push({ next: id, last: id });
      this.count++;
    }
  }

  /** The next ID, or undefined when empty. */
  take(): bigint | undefined {
    const head = this.runs[0];
    if (head === undefined) return undefined;
    const id = head.next;
    if (id === head.last) this.runs.shift();
    else head.next = id + 1n;
    this.count--;
    return id;
  }

  /** n IDs, or undefined (and nothing taken) when fewer than n are left. */
  takeMany(n: number): bigint[] | undefined {
    if (n > this.count) return undefined;
    const out: bigint[] = [];
    for (let i = 0; i < n; i++) out.push(this.take()!);
    return out;
  }

  /** Forgets every ID (close(): an unused reserve becomes a gap). */
  clear(): void {
    this.runs.length = 0;
    this.count = 0;
  }
}

/** Reserve sizing: `seconds` of the observed rate, within [min, max]. */
export interface ReservePolicy {
  readonly seconds: number;
  readonly min: number;
  readonly max: number;
}

/**
 * The reserve a tag should hold: rate (IDs per second) × seconds, rounded up,
 * within [min, max]. The target only grows, and only when the wanted size is
 * at least 1.5 × the current target, so a rate that ramps up costs a few
 * top-up requests, not one per batch. (A rate that falls keeps the larger
 * reserve: giving part of it up would only make a gap.)
 */
export function reserveTarget(policy: ReservePolicy, ratePerSecond: number, current: number): number {
  const want = Math.min(policy.max, Math.max(policy.min, Math.ceil(Math.max(0, ratePerSecond) * policy.seconds)));
  if (current === 0) return want;
  return want >= current * 1.5 || (want === policy.max && want > current) ? want : current;
}

/**
 * Codes that mean "no server could issue" once the transport's retries are
 * spent: unreachable or timed out (STORE_UNAVAILABLE), a server whose store is
 * down and buffer spent (SEGMENTS_EXHAUSTED), a draining server
 * (SHUTTING_DOWN). Not a 4xx (the caller must change something), not
 * RATE_LIMITED (the reserve is not a way around a limit), not a rollback or an
 * exhausted ID space (those need an operator; the reserve must not hide them).
 */
const NO_SERVER_CODES: ReadonlySet<string> = new Set(['STORE_UNAVAILABLE', 'SEGMENTS_EXHAUSTED', 'SHUTTING_DOWN']);

export function isNoServerAnswer(e: unknown): boolean {
  return e instanceof UnavailableError && NO_SERVER_CODES.has(e.code);
}

/** The refusal once buffer and reserve are spent while no server answers. */
export function reserveExhausted(tag: string, cause: unknown): SequoiaError {
  const why = cause instanceof Error ? `: ${cause.message}` : '';
  return new UnavailableError(
    'RESERVE_EXHAUSTED',
    `no Sequoia server answers and the reserve of tag ${JSON.stringify(tag)} is spent; creation pauses until a server answers${why}`,
    { cause },
  );
}
