/**
 * The Snowflake generator's pure core: one issuer of (tick, node, sequence)
 * triples under a layout, answering decimal strings.
 *
 * Invariant: no (tick, node value, shard, sequence) is ever issued twice by
 * one generator, and never at or below `afterTick` (the previous holder's last
 * reported tick), whatever the clock does. When that cannot be kept, `take`
 * throws CLOCK_MOVED_BACKWARDS, LEASE_LOST or ID_SPACE_EXHAUSTED, or answers
 * a Wait ("retry after n ms", or "renew the ceiling first"): the core never
 * sleeps; the service decides how to wait.
 *
 * Hot path: no BigInt. The ID is tick × 2^lowBits + low, where `low` (node
 * fields and sequence) is below 2^lowBits. The decimal form of tick × 2^lowBits
 * is computed once per tick as q × 10^8 + r (exact in doubles), and each ID
 * adds `low` to r: one addition, a comparison and a short number-to-string.
 *
 * Clock policies when the clock reads a tick below the last one issued:
 * - reject: throw CLOCK_MOVED_BACKWARDS (retryAfterMs = the gap);
 * - wait: answer "retry after gap ms" while the gap is at most `maxWaitMs`,
 *   else throw;
 * - logical: keep issuing on the last tick and, when its sequence runs out,
 *   borrow the next tick (ahead of the clock). Ticks above `ceilingTick` are
 *   never used until the service has persisted a higher ceiling (reason
 *   "ceiling"), so a restart starts after every borrowed tick;
 * - backup-worker: switch to a reserved worker id whose own last tick is
 *   below the clock, and keep issuing there; throw when none is.
 */
import { ClockError, InvalidArgumentError, UnavailableError } from '../errors.js';
import { type Clock, monotonicMs } from '../clock.js';
import { type Random, systemRandom } from '../random.js';
import { assertShard } from '../request-rules.js';
import { type Layout, idSpaceExhausted, splitWorker } from './layout.js';

export const CLOCK_POLICIES = ['reject', 'wait', 'logical', 'backup-worker'] as const;
export type ClockPolicy = (typeof CLOCK_POLICIES)[number];

/**
 * Why `take` issued no ID, and when to retry: made on the rare path only, never
 * changed after. 'sequence': the tick's sequence is used up; 'clock': the clock
 * is behind (policy wait); 'ceiling': the tick `wantTick` needs a higher
 * persisted ceiling first (renew, then retry at once); 'cutover': the tick is
 * past `lastTick`, a lineage version's last: the next version issues from here.
 */
export type Wait =
  | { readonly reason: 'sequence' | 'clock'; readonly waitMs: number }
  | { readonly reason: 'ceiling'; readonly waitMs: 0; readonly wantTick: number }
  | { readonly reason: 'cutover'; readonly waitMs: 0 };

export type WaitReason = Wait['reason'];

/**
 * A clock event, reported once when it starts (never per ID): the clock seen
 * behind the last tick, the first borrowed tick of a `logical` episode, a
 * switch to another worker id under `backup-worker`.
 */
export interface ClockEvent {
  readonly kind: 'backwards' | 'borrow' | 'backup-switch';
  readonly policy: ClockPolicy;
  /** How far the clock is behind the last tick, ms. */
  readonly gapMs: number;
  /** The tick about to be issued ('borrow', 'backup-switch') or the last one ('backwards'). */
  readonly tick: number;
  readonly fromWorker?: number;
  readonly toWorker?: number;
}

export interface WorkerSlot {
  /** The value of the layout's node fields together (e.g. datacenter << 5 | worker for twitter). */
  readonly workerId: number;
  /** Issue strictly after this tick (the previous holder's last reported tick). Default -1. */
  readonly afterTick?: number;
}

export interface SnowflakeGeneratorOptions {
  readonly layout: Layout;
  readonly clock: Clock;
  /** Default worker 0, after tick -1. */
  readonly worker?: WorkerSlot;
  /** Reserved worker ids for `backup-worker`, in the order they are tried. */
  readonly backups?: readonly WorkerSlot[];
  /** Default 'wait'. */
  readonly clockPolicy?: ClockPolicy;
  /** For `wait`: the largest gap waited out, ms. Default 1000. */
  readonly maxWaitMs?: number;
  /** For layouts whose sequence starts at random. Default: the system's (crypto) random source; inject one in tests. */
  readonly random?: Random;
  /**
   * A lineage version's last tick (the one before the next version's cutover):
   * past it, `take` answers a Wait with reason 'cutover' instead of issuing.
   * Default: the layout's last tick, past which it throws ID_SPACE_EXHAUSTED.
   */
  readonly lastTick?: number;
  /** Highest tick that may be issued until `extend` raises it. Default: no ceiling. */
  readonly ceilingTick?: number;
  /** Monotonic ms until which issuing is allowed (a lease); default forever. */
  readonly validUntil?: number;
  /** Monotonic clock for `validUntil`. Default the clock's monotonic reading (`monotonicMs(clock)`). */
  readonly monotonic?: () => number;
  /** Told of clock events (for logs); called on the rare path only. */
  readonly onClockEvent?: (e: ClockEvent) => void;
}

export interface GeneratorStats {
  readonly lastTick: number;
  readonly workerId: number;
  readonly clockBackwardsTotal: number;
  readonly sequenceExhaustedTotal: number;
  readonly issuedTotal: number;
}

const E8 = 100_000_000;
const ZPAD = ['', '0', '00', '000', '0000', '00000', '000000', '0000000', '00000000'];
const RANDOM_POOL = 256;
/** The retry for a used-up sequence on 1-ms ticks: one shared value, as the wait is always 1 ms. */
const NEXT_MS: Wait = Object.freeze({ reason: 'sequence', waitMs: 1 });
const CUTOVER: Wait = Object.freeze({ reason: 'cutover', waitMs: 0 });

/**
 * Exact decimal split of tick × 2^lowBits (< 2^63) into q × 10^8 + r, in doubles.
 * Exported for tests.
 */
export function splitE8(tick: number, lowBits: number): [number, number] {
  const pBits = Math.min(lowBits, 24);
  const P = 2 ** pBits;
  const A = tick * 2 ** (lowBits - pBits); // exact: below 2^53
  const a1 = Math.floor(A / E8);
  const a0 = A - a1 * E8;
  const m = a0 * P; // < 10^8 × 2^24 < 2^53: exact
  const mq = Math.floor(m / E8);
  return [a1 * P + mq, m - mq * E8];
}

export class SnowflakeGenerator {
  readonly layout: Layout;
  readonly clockPolicy: ClockPolicy;
  private readonly clock: Clock;
  private readonly monotonic: () => number;
  private readonly epoch: number;
  private readonly unit: number;
  private readonly seqMax: number;
  private readonly seqMul: number;
  private readonly maxTick: number;
  private readonly cutsOver: boolean;
  private readonly maxWaitMs: number;
  private readonly randomMax: number; // -1: start at zero
  private readonly random: Random;
  private readonly rnd = new Uint32Array(RANDOM_POOL);
  private rndPos = RANDOM_POOL;
  private readonly sharded: boolean;
  private readonly shardPlace: number;
  private readonly workerIds: number[];
  private readonly nodeBase: number[];
  private readonly lastTick: Float64Array;
  private readonly seq: Float64Array;
  private cur = 0;
  private ceiling: number;
  private validUntil: number;
  private revoked = false;
  private behind = false;
  private borrowing = false;
  private readonly onClockEvent: ((e: ClockEvent) => void) | undefined;
  private exhaustedTick = -2;
  private fmtTick = -1;
  private fmtQ = 0;
  private fmtR = 0;
  private fmtQs0 = '';
  private fmtQs1 = '';
  private maxIssued = -1;
  private backwards = 0;
  private exhausted = 0;
  private issued = 0;

  constructor(o: SnowflakeGeneratorOptions) {
    const l = o.layout;
    this.layout = l;
    this.clock = o.clock;
    const clock = o.clock;
    this.monotonic = o.monotonic ?? (() => monotonicMs(clock));
    this.onClockEvent = o.onClockEvent;
    this.clockPolicy = o.clockPolicy ?? 'wait';
    if (!(CLOCK_POLICIES as readonly string[]).includes(this.clockPolicy)) {
      throw new InvalidArgumentError(`clock policy must be one of ${CLOCK_POLICIES.join(', ')}`);
    }
    this.maxWaitMs = o.maxWaitMs ?? 1000;
    if (!(this.maxWaitMs >= 0)) throw new InvalidArgumentError('maxWaitMs must be a number from 0');
    this.epoch = l.epochMs;
    this.unit = l.unitMs;
    this.seqMax = 2 ** l.sequenceBits - 1;
    this.seqMul = l.sequenceMul;
    const lastTick = o.lastTick ?? l.maxTick;
    if (!Number.isSafeInteger(lastTick) || lastTick < -1) throw new InvalidArgumentError('lastTick must be an integer from -1');
    this.maxTick = Math.min(l.maxTick, lastTick);
    this.cutsOver = lastTick < l.maxTick;
    this.randomMax = l.sequenceStart.kind === 'random' ? l.sequenceStart.max : -1;
    this.random = o.random ?? systemRandom;
    this.ceiling = o.ceilingTick ?? Number.POSITIVE_INFINITY;
    this.validUntil = o.validUntil ?? Number.POSITIVE_INFINITY;
    const shardIdx = l.fields.findIndex((x) => x.role === 'shard');
    this.sharded = shardIdx >= 0;
    this.shardPlace = shardIdx >= 0 ? (l.placeValues[shardIdx] as number) : 0;
    const slots = [o.worker ?? { workerId: 0 }, ...(o.backups ?? [])];
    if (this.clockPolicy === 'backup-worker' && slots.length < 2) {
      throw new InvalidArgumentError('clock policy backup-worker needs at least one reserved backup worker id');
    }
    if (this.sharded && slots.length > 1)
      throw new InvalidArgumentError(`layout ${l.name} has a per-request shard: backup workers do not apply`);
    const seen = new Set<number>();
    this.workerIds = [];
    this.nodeBase = [];
    for (const s of slots) {
      if (!Number.isSafeInteger(s.workerId) || s.workerId < 0 || s.workerId >= 2 ** l.workerBits) {
        throw new InvalidArgumentError(`worker id must be an integer from 0 to ${2 ** l.workerBits - 1} for layout ${l.name}`);
      }
      if (seen.has(s.workerId)) throw new InvalidArgumentError(`worker id ${s.workerId} is given twice`);
      seen.add(s.workerId);
      this.workerIds.push(s.workerId);
      const parts = splitWorker(l, s.workerId);
      let base = 0;
      l.fields.forEach((fl, i) => {
        if (fl.role === 'node') base += (parts[fl.name] ?? 0) * (l.placeValues[i] as number);
      });
      this.nodeBase.push(base);
    }
    const n = this.sharded ? 2 ** l.shardBits : slots.length;
    this.lastTick = new Float64Array(n);
    this.seq = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const after = this.sharded ? (slots[0]?.afterTick ?? -1) : (slots[i]?.afterTick ?? -1);
      if (!Number.isSafeInteger(after) || after < -1) throw new InvalidArgumentError('afterTick must be an integer from -1');
      this.lastTick[i] = after;
      this.seq[i] = this.seqMax; // the next ID needs a tick above afterTick
      if (after > this.maxIssued) this.maxIssued = after;
    }
  }

  /** The worker id in use now (changes under backup-worker). */
  get workerId(): number {
    return this.workerIds[this.cur] as number;
  }

  /** All worker ids this generator may use (primary first). */
  get workerIdList(): readonly number[] {
    return this.workerIds;
  }

  /** The highest tick issued (or the starting `afterTick`). Persist this as the last tick. */
  get lastIssuedTick(): number {
    return this.maxIssued;
  }

  /**
   * The highest tick issued on one worker id (or its starting `afterTick`).
   * Under backup-worker the ids differ: after a clock stepped forward and
   * back, the primary's last tick is ahead of the clock and a backup's is
   * not. Release each id with its own, or a restart finds no backup free.
   */
  lastIssuedTickOf(workerId: number): number {
    const i = this.workerIds.indexOf(workerId);
    if (i < 0) throw new InvalidArgumentError(`worker id ${workerId} is not one of this generator's`);
    // A sharded layout has one slot per shard, all on the one worker id.
    return this.sharded ? this.maxIssued : (this.lastTick[i] as number);
  }

  get ceilingTick(): number {
    return this.ceiling;
  }

  /**
   * Raises the ceiling and/or the lease deadline (after a renewal was stored).
   * Never lowers the ceiling, and never undoes `revoke()` (a renewal that was
   * in flight when the lease was lost or the service closed).
   */
  extend(ceilingTick: number, validUntil: number): void {
    if (this.revoked) return;
    if (ceilingTick > this.ceiling) this.ceiling = ceilingTick;
    this.validUntil = validUntil;
  }

  /** Stops issuing for good (lease lost or generator closed). */
  revoke(): void {
    this.revoked = true;
    this.validUntil = Number.NEGATIVE_INFINITY;
  }

  /** The tick the clock reads now. */
  currentTick(): number {
    const d = this.clock.now() - this.epoch;
    return this.unit === 1 ? d : Math.floor(d / this.unit);
  }

  stats(): GeneratorStats {
    return {
      lastTick: this.maxIssued,
      workerId: this.workerId,
      clockBackwardsTotal: this.backwards,
      sequenceExhaustedTotal: this.exhausted,
      issuedTotal: this.issued,
    };
  }

  /**
   * One ID as a decimal string, or a Wait saying why not and when to retry.
   * `shard` is the per-request shard for layouts that have one (else ignored).
   */
  take(shard = 0): string | Wait {
    const now = this.clock.now();
    // The lease deadline is read on every take of a leased generator: the wall
    // clock cannot stand in for it (frozen or stepped back, it would let a
    // holder issue past its lease, after the id went to another; sim snowflake
    // seed 17). One monotonic read, well inside the time an ID may take at the
    // layout's cap; the deadline already ends a safety margin before the expiry.
    if (this.validUntil !== Number.POSITIVE_INFINITY && this.monotonic() >= this.validUntil) throw leaseLost();
    let slot = this.cur;
    let low: number;
    if (this.sharded) {
      slot = assertShard(this.layout, shard);
      low = (this.nodeBase[0] as number) + shard * this.shardPlace;
    } else low = this.nodeBase[slot] as number;
    const d = now - this.epoch;
    const t = this.unit === 1 ? d : Math.floor(d / this.unit);
    const last = this.lastTick[slot] as number;
    if (t > last) {
      this.behind = false;
      this.borrowing = false;
      return this.issue(slot, low, t, this.randomMax < 0 ? 0 : this.randomStart());
    }
    if (t === last) {
      this.behind = false;
      const seq = (this.seq[slot] as number) + 1;
      return seq > this.seqMax ? this.sequenceExhausted(t, d) : this.issue(slot, low, t, seq);
    }
    return this.behindClock(slot, low, t, last, now);
  }

  /** The last tick this generator issues: its layout's, or its lineage version's. */
  get lastAllowedTick(): number {
    return this.maxTick;
  }

  /**
   * Records and formats one ID at (tick, seq), unless the tick is past the
   * end (the layout's, or the lineage version's: the cutover check is this
   * one comparison) or above the ceiling.
   */
  private issue(slot: number, low: number, tick: number, seq: number): string | Wait {
    // The end first: a ceiling is never reserved past maxTick, so asking for one there could only fail.
    if (tick > this.maxTick) {
      if (this.cutsOver) return CUTOVER;
      throw idSpaceExhausted(this.layout);
    }
    if (tick > this.ceiling) return { reason: 'ceiling', waitMs: 0, wantTick: tick };
    this.lastTick[slot] = tick;
    this.seq[slot] = seq;
    if (tick > this.maxIssued) this.maxIssued = tick;
    this.issued++;
    return this.format(tick, low + seq * this.seqMul);
  }

  /** The sequence of tick t is used up: retry at the next tick (d: ms since the epoch). */
  private sequenceExhausted(t: number, d: number): Wait {
    if (this.exhaustedTick !== t) {
      this.exhaustedTick = t;
      this.exhausted++;
    }
    return this.unit === 1 ? NEXT_MS : { reason: 'sequence', waitMs: this.unit - (d - t * this.unit) };
  }

  /** The clock reads tick t, below `last`: reports the episode once, then the policy decides. */
  private behindClock(slot: number, low: number, t: number, last: number, now: number): string | Wait {
    if (t < 0) throw new ClockError(`the clock reads ${new Date(now).toISOString()}, before the layout's epoch`);
    const gapMs = (last - t) * this.unit;
    if (!this.behind) {
      this.behind = true;
      this.backwards++;
      this.onClockEvent?.({ kind: 'backwards', policy: this.clockPolicy, gapMs, tick: last });
    }
    switch (this.clockPolicy) {
      case 'reject':
        throw new ClockError(`the clock is ${gapMs} ms behind the last issued tick; refusing (policy reject)`, { retryAfterMs: gapMs });
      case 'wait':
        return this.waitForClock(gapMs);
      case 'logical':
        return this.borrow(slot, low, last, gapMs);
      case 'backup-worker':
        return this.switchWorker(t, gapMs);
    }
  }

  /** Policy wait: retry after the gap, unless it is longer than `maxWaitMs`. */
  private waitForClock(gapMs: number): Wait {
    if (gapMs > this.maxWaitMs) {
      throw new ClockError(
        `the clock is ${gapMs} ms behind the last issued tick, more than the ${this.maxWaitMs} ms the wait policy allows`,
        {
          retryAfterMs: gapMs,
        },
      );
    }
    return { reason: 'clock', waitMs: gapMs };
  }

  /** Policy logical: go on at the last tick; when its sequence is used up, borrow the next tick. */
  private borrow(slot: number, low: number, last: number, gapMs: number): string | Wait {
    const seq = (this.seq[slot] as number) + 1;
    if (seq <= this.seqMax) return this.issue(slot, low, last, seq);
    const tick = last + 1;
    const start = this.randomMax < 0 ? 0 : this.randomStart();
    if (!this.borrowing) {
      this.borrowing = true;
      this.onClockEvent?.({ kind: 'borrow', policy: this.clockPolicy, gapMs: gapMs + this.unit, tick });
    }
    return this.issue(slot, low, tick, start);
  }

  /** Policy backup-worker: issue at tick t on the first worker id with room there. */
  private switchWorker(t: number, gapMs: number): string | Wait {
    const s = this.findBackup(t);
    if (s < 0) {
      throw new ClockError(`the clock is ${gapMs} ms behind the last issued tick and no backup worker id is free at this tick`, {
        retryAfterMs: gapMs,
      });
    }
    if (s !== this.cur) {
      this.onClockEvent?.({
        kind: 'backup-switch',
        policy: this.clockPolicy,
        gapMs,
        tick: t,
        fromWorker: this.workerIds[this.cur],
        toWorker: this.workerIds[s],
      });
    }
    this.cur = s;
    this.behind = false;
    const seq = t === this.lastTick[s] ? (this.seq[s] as number) + 1 : this.randomMax < 0 ? 0 : this.randomStart();
    return this.issue(s, this.nodeBase[s] as number, t, seq);
  }

  /** A slot whose last tick leaves room at tick t, or -1. */
  private findBackup(t: number): number {
    for (let i = 0; i < this.workerIds.length; i++) {
      const lt = this.lastTick[i] as number;
      if (lt < t || (lt === t && (this.seq[i] as number) < this.seqMax)) return i;
    }
    return -1;
  }

  private randomStart(): number {
    if (this.rndPos === RANDOM_POOL) {
      this.random.fill(new Uint8Array(this.rnd.buffer));
      this.rndPos = 0;
    }
    return (this.rnd[this.rndPos++] as number) % (this.randomMax + 1);
  }

  /** Decimal of tick × 2^lowBits + low, without BigInt. */
  private format(tick: number, low: number): string {
    if (tick !== this.fmtTick) {
      const [q, r] = splitE8(tick, this.layout.lowBits);
      this.fmtTick = tick;
      this.fmtQ = q;
      this.fmtR = r;
      this.fmtQs0 = q === 0 ? '' : String(q);
      this.fmtQs1 = String(q + 1);
    }
    let q = this.fmtQ;
    let r = this.fmtR;
    let qs = this.fmtQs0;
    if (low < E8) r += low;
    else {
      const lq = Math.floor(low / E8);
      r += low - lq * E8;
      q += lq;
      qs = q === 0 ? '' : String(q);
    }
    if (r >= E8) {
      r -= E8;
      qs = q === this.fmtQ ? this.fmtQs1 : String(q + 1);
    }
    if (qs === '') return String(r);
    const s = String(r);
    return s.length === 8 ? qs + s : qs + ZPAD[8 - s.length] + s;
  }
}

function leaseLost(): UnavailableError {
  return new UnavailableError('LEASE_LOST', 'the worker-id lease is lost or could have expired; no ID is issued until it is held again', {
    retryAfterMs: 1000,
  });
}
