/**
 * Observability without a cost on the hot path: nothing here runs per ID.
 *
 * IDs issued, load failures, buffer levels and rates are all read from the
 * allocators' own snapshots (`TagAllocatorSnapshot.issued` is derived from
 * segments loaded minus IDs still buffered), either by a 1 s sampler timer
 * (for the exponentially weighted rate and the sparkline history) or by
 * prom-client `collect()` callbacks at scrape time. Only the error path
 * (`recordError`, from the server's error handler) and segment loads
 * (`onLoad`, a few per minute) touch counters directly.
 *
 * Metric names are the design's (DESIGN.md "Metrics"); the snowflake ones are
 * registered only once a generator reports through `registerSnowflakeSource`.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ERROR_CODES, type ErrorCode } from '../core/errors.js';
import { type Clock, monotonicMs, systemClock } from '../core/clock.js';
import type { IdService } from '../service/id-service.js';
import type { TagAllocatorSnapshot } from '../service/tag-allocator.js';
import type { SnowflakeMetricsSource, SnowflakeWorkerReport } from '../ports/metrics.js';

type IssuedLabel = 'generator' | 'tag' | 'layout';

/** The forms `/v1/uuid` hands out, the `layout` label of `generator="uuid"`. */
export type UuidForm = 'v7' | 'v4' | 'ulid';

/** Cover at or above this is healthy (green). */
export const COVER_OK_SECONDS = 300;
/** Cover below this is critical (red); between the two, a warning (amber). */
export const COVER_CRITICAL_SECONDS = 60;

export type Health = 'ok' | 'warn' | 'critical';

/** One tag as /v1/status and the page see it: the allocator's snapshot plus rates. */
export interface TagStatus {
  readonly snapshot: TagAllocatorSnapshot;
  /** IDs handed out by this server for the tag since it started (survives the allocator being recreated). */
  readonly issuedTotal: number;
  /** Load failures since the server started (same). */
  readonly loadFailuresTotal: number;
  /** Exponentially weighted IDs per second. */
  readonly ratePerSecond: number;
  /** Seconds the buffered IDs last at `ratePerSecond`: 0 when nothing is buffered, Infinity when idle. */
  readonly coverSeconds: number;
  /** IDs per second over each of the last sampler intervals, oldest first. */
  readonly rateHistory: readonly number[];
  readonly health: Health;
  readonly healthReason: string;
  /** Business unique-key conflicts reported for the tag since start (POST /v1/tags/{tag}/conflicts). */
  readonly businessConflicts: number;
  /** Clients that took a reserve of the tag from this server (`?reserve=1`), newest first. */
  readonly reserves: readonly ReserveHolder[];
}

/** The last reserve batch one client took of a tag from this server. */
export interface ReserveHolder {
  /** The client's name (`?client=`), else its token's name, else `-`. */
  readonly client: string;
  /** The peer address (or the one trusted proxies forward). */
  readonly address: string;
  /** IDs in its last reserve batch, and their lowest and highest. */
  readonly ids: number;
  readonly first: string;
  readonly last: string;
  /** Wall-clock ms. */
  readonly at: number;
}

export interface RecentError {
  readonly at: number;
  readonly code: ErrorCode;
  readonly status: number;
  readonly method: string;
  readonly path: string;
  readonly message: string;
}

export type { SnowflakeMetricsSource, SnowflakeWorkerReport } from '../ports/metrics.js';

export interface SequoiaMetricsOptions {
  readonly clock?: Clock;
  /** Sampler period for rates and history. Default 1000 ms; 0 disables the timer (tests call `sample()`). */
  readonly sampleIntervalMs?: number;
  /** Time constant of the weighted rate. Default 30 s. */
  readonly rateTauSeconds?: number;
  /** Samples kept for the sparkline. Default 60. */
  readonly historyLength?: number;
  /** Register prom-client's default process metrics. Default true. */
  readonly defaultMetrics?: boolean;
}

const RECENT_ERRORS = 50;
/** Reserve holders remembered per tag (the oldest is forgotten first). */
const RESERVE_HOLDERS = 50;
const MAX_TRACKED_TAGS = 10_000;
const LOAD_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Per-tag running totals, continued across allocator instances (a tag deleted and recreated). */
interface Track {
  instance: number;
  issuedBase: number;
  issuedLast: number;
  failuresBase: number;
  failuresLast: number;
  sampledTotal: number;
  /** Monotonic ms of the last sample. */
  sampledAt: number;
  rate: number;
  history: number[];
}

/** Seconds of cover: how long `remaining` IDs last at `rate` per second. */
export function coverSeconds(remaining: number, rate: number): number {
  if (remaining <= 0) return 0;
  if (!(rate > 0)) return Number.POSITIVE_INFINITY;
  return remaining / rate;
}

/**
 * A tag's colour on the page and in /v1/status:
 * - critical: the tag refuses (rollback, deleted); or the store is failing and
 *   the buffers are low (nothing left, cover < 60 s, or no next segment and
 *   less than half the current one left); or cover < 60 s;
 * - warn: the first load is still in flight; the last load failed (but the
 *   buffers still hold); or cover < 300 s;
 * - ok otherwise (an idle tag with IDs buffered has infinite cover).
 */
export function tagHealth(
  s: Pick<TagAllocatorSnapshot, 'remaining' | 'remainingCurrent' | 'currentSize' | 'nextReady' | 'loads' | 'lastError' | 'refusing'>,
  cover: number,
): { health: Health; reason: string } {
  if (s.refusing) return { health: 'critical', reason: `refusing: ${s.refusing}` };
  const failing = s.lastError !== undefined;
  if (failing) {
    const low = s.remaining === 0 || cover < COVER_CRITICAL_SECONDS || (!s.nextReady && s.remainingCurrent * 2 < s.currentSize);
    if (low) return { health: 'critical', reason: `store failing (${s.lastError?.code}) and buffers low` };
  }
  if (s.loads === 0 && s.remaining === 0) return { health: 'warn', reason: 'first segment loading' };
  if (cover < COVER_CRITICAL_SECONDS) return { health: 'critical', reason: `cover below ${COVER_CRITICAL_SECONDS} s` };
  if (failing) return { health: 'warn', reason: `last load failed (${s.lastError?.code})` };
  if (cover < COVER_OK_SECONDS) return { health: 'warn', reason: `cover below ${COVER_OK_SECONDS} s` };
  return { health: 'ok', reason: Number.isFinite(cover) ? 'cover ok' : 'idle' };
}

/**
 * The server's metrics and status figures.
 *
 * @example
 * const metrics = new SequoiaMetrics();
 * const service = new IdService({ store, marks, onLoad: metrics.onLoad });
 * metrics.attach(service);
 * const app = await buildApp({ service, metrics });
 */
export class SequoiaMetrics {
  readonly registry = new Registry();
  private readonly clock: Clock;
  private readonly sampleIntervalMs: number;
  private readonly tauSeconds: number;
  private readonly historyLength: number;
  private service: IdService | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly tracks = new Map<string, Track>();
  private readonly errorCounts = new Map<ErrorCode, number>();
  private readonly recent: RecentError[] = [];
  private readonly errorsTotal: Counter<'code'>;
  private readonly conflictsTotal: Counter<'tag'>;
  private readonly conflicts = new Map<string, number>();
  private readonly reserves = new Map<string, Map<string, ReserveHolder>>();
  private readonly loadSeconds: Histogram<'tag'>;
  private snowflakeSources: SnowflakeMetricsSource[] | undefined;
  private storeProbe: (() => Promise<{ readonly reachable: boolean }>) | undefined;
  /** UUIDs handed out, by form (`v7`, `v4`, `ulid`): plain numbers, added to the counter at scrape time. */
  private readonly uuidIssued = new Map<UuidForm, number>();

  constructor(options: SequoiaMetricsOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.sampleIntervalMs = options.sampleIntervalMs ?? 1000;
    this.tauSeconds = options.rateTauSeconds ?? 30;
    this.historyLength = options.historyLength ?? 60;
    const registers = [this.registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });

    // Read at scrape time from the allocators; see the file comment.
    const statuses = () => this.tagStatuses();
    const snowflakeIssued = (c: Counter<IssuedLabel>) => this.collectSnowflakeIssued(c);
    const uuids = this.uuidIssued;
    new Counter({
      name: 'sequoia_ids_issued_total',
      help: 'IDs handed out: generator="segment" by tag, generator="snowflake" by layout, generator="uuid" by form (layout v7, v4 or ulid); exact at scrape time.',
      labelNames: ['generator', 'tag', 'layout'] as const,
      registers,
      collect: function (this: Counter<IssuedLabel>) {
        this.reset();
        for (const s of statuses()) this.inc({ generator: 'segment', tag: s.snapshot.tag }, s.issuedTotal);
        snowflakeIssued(this);
        for (const [form, n] of uuids) this.inc({ generator: 'uuid', layout: form }, n);
      },
    });
    this.errorsTotal = new Counter({
      name: 'sequoia_errors_total',
      help: 'Requests answered with an error, by error code.',
      labelNames: ['code'] as const,
      registers,
    });
    for (const code of ERROR_CODES) this.errorsTotal.inc({ code }, 0);
    this.conflictsTotal = new Counter({
      name: 'sequoia_business_conflicts_total',
      help: 'Business unique-key conflicts reported by clients (POST /v1/tags/{tag}/conflicts): possible evidence of a repeated ID.',
      labelNames: ['tag'] as const,
      registers,
    });
    this.registerSegmentGauges(registers);
    this.loadSeconds = new Histogram({
      name: 'sequoia_segment_load_seconds',
      help: 'Duration of segment loads from the store, successful or not.',
      labelNames: ['tag'] as const,
      buckets: LOAD_BUCKETS,
      registers,
    });
    new Counter({
      name: 'sequoia_segment_load_failures_total',
      help: 'Segment loads that failed (store error, timeout, rollback detected).',
      labelNames: ['tag'] as const,
      registers,
      collect: function (this: Counter<'tag'>) {
        this.reset();
        for (const s of statuses()) this.inc({ tag: s.snapshot.tag }, s.loadFailuresTotal);
      },
    });
  }

  /** The per-tag gauges of the allocators' buffers, read at scrape time. */
  private registerSegmentGauges(registers: Registry[]): void {
    const statuses = () => this.tagStatuses();
    const gauge = (name: string, help: string, value: (s: TagStatus) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['tag'] as const,
        registers,
        collect: function (this: Gauge<'tag'>) {
          this.reset();
          for (const s of statuses()) {
            const v = value(s);
            if (v !== undefined) this.set({ tag: s.snapshot.tag }, v);
          }
        },
      });
    gauge('sequoia_segment_remaining', 'IDs left in the current and next segments.', (s) => s.snapshot.remaining);
    gauge('sequoia_segment_next_ready', '1 when the next segment is loaded, else 0.', (s) => (s.snapshot.nextReady ? 1 : 0));
    gauge('sequoia_segment_step', 'Step (segment length) of the last load, after the dynamic step policy.', (s) => s.snapshot.step);
    gauge(
      'sequoia_segment_cover_seconds',
      'Seconds the buffered IDs (current + next) last at the exponentially weighted recent rate; +Inf when idle.',
      (s) => s.coverSeconds,
    );
  }

  /**
   * Registers sequoia_store_reachable: 1 when the store answered `probe`'s
   * last ping, 0 when it did not (error or timeout). Pinged at scrape time
   * through `probe` (which bounds and caches the pings, store-probe.ts), so it
   * is true of an idle server too, where no segment load or request would show
   * a dead store. A second call replaces the probe.
   */
  registerStoreProbe(probe: () => Promise<{ readonly reachable: boolean }>): void {
    const registered = this.storeProbe !== undefined;
    this.storeProbe = probe;
    if (registered) return;
    const current = () => this.storeProbe;
    new Gauge({
      name: 'sequoia_store_reachable',
      help: 'Whether the store answered the last ping (1) or not (0: error or no answer within 1 s), pinged at scrape time.',
      registers: [this.registry],
      async collect(this: Gauge) {
        const p = current();
        if (p !== undefined) this.set((await p()).reachable ? 1 : 0);
      },
    });
  }

  /** Pass as `IdServiceOptions.onLoad`: observes each load's duration. */
  readonly onLoad = (tag: string, _ok: boolean, seconds: number): void => {
    this.loadSeconds.observe({ tag }, seconds);
  };

  /** Starts reading `service`'s allocators (and the sampler timer). */
  attach(service: IdService): void {
    this.service = service;
    this.sample();
    if (this.sampleIntervalMs > 0 && !this.timer) {
      this.timer = setInterval(() => this.sample(), this.sampleIntervalMs);
      this.timer.unref();
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Counts one error answer (called from the server's error handler, never per ID). */
  recordError(e: Omit<RecentError, 'at'>): void {
    this.errorsTotal.inc({ code: e.code });
    this.errorCounts.set(e.code, (this.errorCounts.get(e.code) ?? 0) + 1);
    this.recent.push({ ...e, at: this.clock.now() });
    if (this.recent.length > RECENT_ERRORS) this.recent.shift();
  }

  /** Counts `n` UUIDs of one form about to be answered (once per request, not per ID). */
  recordUuids(form: UuidForm, n: number): void {
    this.uuidIssued.set(form, (this.uuidIssued.get(form) ?? 0) + n);
  }

  /**
   * Counts one reported business unique-key conflict; false (not counted)
   * when `MAX_TRACKED_TAGS` other tags already have conflicts, so reports
   * cannot grow the series without bound.
   */
  recordConflict(tag: string): boolean {
    const n = this.conflicts.get(tag);
    if (n === undefined && this.conflicts.size >= MAX_TRACKED_TAGS) return false;
    this.conflicts.set(tag, (n ?? 0) + 1);
    this.conflictsTotal.inc({ tag });
    return true;
  }

  /**
   * Remembers a reserve batch a client took (the SDK marks them `?reserve=1`):
   * the status page shows who holds reserves of a tag. One entry per client
   * name and address, the newest batch; bounded per tag and in tags.
   */
  recordReserve(tag: string, holder: Omit<ReserveHolder, 'at'>): void {
    let m = this.reserves.get(tag);
    if (m === undefined) {
      if (this.reserves.size >= MAX_TRACKED_TAGS) return;
      m = new Map();
      this.reserves.set(tag, m);
    }
    const key = `${holder.client}\u0000${holder.address}`;
    m.delete(key); // re-inserted last: the map's order is oldest first
    m.set(key, { ...holder, at: this.clock.now() });
    if (m.size > RESERVE_HOLDERS) m.delete(m.keys().next().value as string);
  }

  /** Conflicts reported for `tag` since start. */
  conflictsOf(tag: string): number {
    return this.conflicts.get(tag) ?? 0;
  }

  /** Errors answered since start, by code (codes never seen are left out). */
  errorsByCode(): Record<string, number> {
    return Object.fromEntries([...this.errorCounts].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  }

  /** The last errors answered, newest first. */
  recentErrors(): readonly RecentError[] {
    return [...this.recent].reverse();
  }

  /**
   * Hook for the snowflake generator: registers
   * sequoia_snowflake_worker_id, sequoia_snowflake_last_tick,
   * sequoia_snowflake_clock_backwards_total,
   * sequoia_snowflake_sequence_exhausted_total and
   * sequoia_worker_lease_expiry_seconds (seconds until the lease expires),
   * sequoia_worker_lease_ttl_seconds (the lease's length) and
   * sequoia_layout_remaining_seconds (until the layout's time bits run out), all
   * labelled by `generator`, read from `source.report()` at scrape time. Until
   * a generator calls this, none of them is exposed (no placeholder values).
   */
  /** Every snowflake worker's report now (for /v1/status); empty until a generator registers. */
  snowflakeReports(): SnowflakeWorkerReport[] {
    return (this.snowflakeSources ?? []).flatMap((src) => [...src.report()]);
  }

  registerSnowflakeSource(source: SnowflakeMetricsSource): void {
    if (this.snowflakeSources) {
      this.snowflakeSources.push(source);
      return;
    }
    const sources: SnowflakeMetricsSource[] = [source];
    this.snowflakeSources = sources;
    const reports = () => sources.flatMap((s) => s.report());
    const registers = [this.registry];
    const now = () => this.clock.now();
    // One metric per report field, labelled by generator, filled from the reports at scrape time.
    const perWorker = (name: string, help: string, f: (r: SnowflakeWorkerReport) => number | undefined) => ({
      name,
      help,
      labelNames: ['generator'] as const,
      registers,
      collect(this: Gauge<'generator'> | Counter<'generator'>) {
        this.reset();
        for (const r of reports()) {
          const v = f(r);
          if (v === undefined) continue;
          if (this instanceof Gauge) this.set({ generator: r.generator }, v);
          else this.inc({ generator: r.generator }, v);
        }
      },
    });
    new Gauge(perWorker('sequoia_snowflake_worker_id', 'Worker id in use.', (r) => r.workerId));
    new Gauge(perWorker('sequoia_snowflake_last_tick', 'Last tick issued (layout time units since its epoch).', (r) => r.lastTick));
    new Counter(
      perWorker('sequoia_snowflake_clock_backwards_total', 'Times the clock was seen behind the last tick.', (r) => r.clockBackwardsTotal),
    );
    new Counter(
      perWorker(
        'sequoia_snowflake_sequence_exhausted_total',
        'Ticks whose sequence ran out (callers waited for the next tick).',
        (r) => r.sequenceExhaustedTotal,
      ),
    );
    new Gauge(
      perWorker('sequoia_worker_lease_expiry_seconds', 'Seconds until the worker-id lease expires (negative: expired).', (r) =>
        r.leaseExpiresAtMs === undefined ? undefined : (r.leaseExpiresAtMs - now()) / 1000,
      ),
    );
    // The expiry above counts down between renewals (a healthy sql lease reads between 2/3 of this and all
    // of it): alerts compare the two, so they can tell a missed renewal from the usual countdown.
    new Gauge(
      perWorker('sequoia_worker_lease_ttl_seconds', 'Length of the worker-id lease each renewal grants.', (r) =>
        r.leaseTtlMs === undefined ? undefined : r.leaseTtlMs / 1000,
      ),
    );
    new Gauge(
      perWorker(
        'sequoia_layout_remaining_seconds',
        "Seconds until the layout's time bits run out; after that it refuses to issue (it never wraps).",
        (r) => r.layoutRemainingSeconds,
      ),
    );
  }

  /** Prometheus text exposition. */
  metricsText(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * Takes one sample of every tag: advances the weighted rates and the
   * history. Runs from the timer; exported for tests.
   */
  sample(): void {
    if (!this.service) return;
    // The rate's dt on the monotonic clock: a stepped wall clock must not make a burst or a gap.
    const now = monotonicMs(this.clock);
    const alive = new Set<string>();
    for (const snap of this.service.snapshot()) {
      alive.add(snap.tag);
      const t = this.track(snap);
      const total = t.issuedBase + snap.issued;
      const dt = (now - t.sampledAt) / 1000;
      if (dt > 0) {
        const inst = Math.max(0, total - t.sampledTotal) / dt;
        // The first interval seeds the average, so a new tag's cover is not
        // overstated while the average warms up.
        const alpha = t.history.length === 0 ? 1 : 1 - Math.exp(-dt / this.tauSeconds);
        t.rate += alpha * (inst - t.rate);
        t.history.push(inst);
        if (t.history.length > this.historyLength) t.history.shift();
      }
      t.sampledTotal = total;
      t.sampledAt = now;
    }
    if (this.tracks.size > MAX_TRACKED_TAGS) {
      for (const tag of this.tracks.keys()) if (!alive.has(tag)) this.tracks.delete(tag);
    }
  }

  /** Every live tag with totals, rate, cover and health: what /v1/status and the gauges read. */
  tagStatuses(): TagStatus[] {
    if (!this.service) return [];
    return this.service.snapshot().map((snap) => {
      const t = this.track(snap);
      const cover = coverSeconds(snap.remaining, t.rate);
      const conflicts = this.conflicts.get(snap.tag) ?? 0;
      // A reported conflict outranks every other state: it may be the first evidence that an ID repeated.
      const h =
        conflicts > 0
          ? {
              health: 'critical' as const,
              reason: `${conflicts} business unique-key conflict${conflicts === 1 ? '' : 's'} reported: see docs/audit.md`,
            }
          : tagHealth(snap, cover);
      return {
        snapshot: snap,
        issuedTotal: t.issuedBase + snap.issued,
        loadFailuresTotal: t.failuresBase + snap.loadFailures,
        ratePerSecond: t.rate,
        coverSeconds: cover,
        rateHistory: [...t.history],
        health: h.health,
        healthReason: h.reason,
        businessConflicts: conflicts,
        reserves: [...(this.reserves.get(snap.tag)?.values() ?? [])].reverse(),
      };
    });
  }

  /** The tag's running totals, carried over when its allocator was replaced. */
  private track(snap: TagAllocatorSnapshot): Track {
    let t = this.tracks.get(snap.tag);
    if (!t) {
      t = {
        instance: snap.instance,
        issuedBase: 0,
        issuedLast: 0,
        failuresBase: 0,
        failuresLast: 0,
        sampledTotal: snap.issued,
        sampledAt: monotonicMs(this.clock),
        rate: 0,
        history: [],
      };
      this.tracks.set(snap.tag, t);
    } else if (t.instance !== snap.instance) {
      t.issuedBase += t.issuedLast;
      t.failuresBase += t.failuresLast;
      t.instance = snap.instance;
    }
    t.issuedLast = snap.issued;
    t.failuresLast = snap.loadFailures;
    return t;
  }

  private collectSnowflakeIssued(c: Counter<IssuedLabel>): void {
    if (!this.snowflakeSources) return;
    // A report's `generator` is its layout's name; the series says what it is.
    for (const r of this.snowflakeSources.flatMap((s) => s.report())) {
      if (r.issuedTotal !== undefined) c.inc({ generator: 'snowflake', layout: r.generator }, r.issuedTotal);
    }
  }
}
