/**
 * The Sequoia client: IDs from one or more Sequoia servers, as `bigint`.
 *
 * Segment tags are served from a local double buffer (see tag-buffer.ts), so
 * most calls never touch the network; snowflake and UUID calls go to the
 * server each time. Every ID the client returns was handed out by a server
 * exactly once, so IDs never repeat across callers or clients; a client that
 * stops with IDs in its buffer leaves a gap, never a repeat.
 *
 * This module imports nothing from the server side: only the error classes
 * and ID parsing of src/core.
 */
import { MAX_COUNT } from '../core/request-rules.js';
import { InvalidArgumentError, SequoiaError } from '../core/errors.js';
import { parseDecimalId } from '../core/id.js';
import { TAG_RULE, isValidTag } from '../core/tag.js';
import { FallbackIssuer } from '../core/fallback/fallback-space.js';
import { type Clock, monotonicMs, systemClock } from '../core/clock.js';
import { type Random, randomUnit, systemRandom } from '../core/random.js';
import { systemTimers, type Timers } from '../core/timers.js';
import { RangeSet, type ReservePolicy, isNoServerAnswer, reserveExhausted, reserveTarget } from './reserve.js';
import { type BatchPolicy, TagBuffer } from './tag-buffer.js';
import { type RetryOptions, Transport, closedError } from './transport.js';

/** Batch sizing for segment tags. */
export interface BatchOptions {
  /** The first batch's size (default 100). */
  readonly initial?: number;
  /** Smallest batch (default 10). */
  readonly min?: number;
  /** Largest batch (default 50,000; above 10,000 it is fetched as parallel requests of 10,000). */
  readonly max?: number;
  /** How long one batch should last at the observed rate, in ms (default 1000). */
  readonly targetMs?: number;
}

/** The reserve kept per segment tag for when no server answers (see docs/client.md#reserve). */
export interface ReserveOptions {
  /** Seconds of the tag's observed rate the reserve covers (default 60). */
  readonly seconds?: number;
  /** Smallest reserve, in IDs (default 100; also the size before a rate is observed). */
  readonly min?: number;
  /** Largest reserve, in IDs (default 100,000: ten requests of 10,000; at most 1,000,000). */
  readonly max?: number;
  /** While on the reserve, how often the servers are asked again, in ms (default 1000). */
  readonly probeMs?: number;
}

/** What onReserve is told: a tag started serving from its reserve, ran it dry, or has it back. */
export interface ReserveEvent {
  readonly tag: string;
  /**
   * `using`: no server answers, IDs now come from the reserve.
   * `fallback`: the reserve is spent, IDs now come from the tag's fallback space (option `fallback`).
   * `exhausted`: the reserve is spent too (and the fallback lease, if any, has ended); calls refuse with RESERVE_EXHAUSTED.
   * `replenished`: a server answered again and the reserve is full again.
   */
  readonly state: 'using' | 'fallback' | 'exhausted' | 'replenished';
  /** IDs left in the tag's reserve. */
  readonly remaining: number;
}

/** Per tag, in stats(). */
export interface TagStats {
  /** IDs in the local buffer. */
  readonly buffered: number;
  /** IDs in the reserve. */
  readonly reserve: number;
  /** The size the reserve is kept at (seconds × observed rate, within min..max). */
  readonly reserveTarget: number;
  /**
   * `serving` (servers answer), `using` (on the reserve), `fallback` (in the fallback space), `exhausted` (refusing),
   * `missing` (the servers answered TAG_NOT_FOUND: the tag was deleted while this client still holds IDs of it).
   * A tag the servers do not know and of which nothing is held is not listed.
   */
  readonly state: 'serving' | 'using' | 'fallback' | 'exhausted' | 'missing';
  /** The fallback worker id leased for the tag (option `fallback`), if one is held. */
  readonly fallbackWorkerId?: number;
}

/** client.stats(): counters since the client was created, for export as metrics. */
export interface ClientStats {
  /** IDs handed out from a reserve. */
  readonly servedFromReserve: number;
  /** Time any tag spent without a server answering after its reserve was needed (on the reserve or refusing), in ms. */
  readonly msOnReserve: number;
  /** IDs handed out from a fallback space (option `fallback`). */
  readonly servedFromFallback: number;
  /** Calls refused with RESERVE_EXHAUSTED. */
  readonly refusals: number;
  readonly tags: Readonly<Record<string, TagStats>>;
}

export interface ClientOptions {
  /** One server, e.g. `http://127.0.0.1:8080`. Give `url` or `urls`. */
  readonly url?: string;
  /** Several servers: calls stick to one and fail over to the next on 503 or a connection error. */
  readonly urls?: readonly string[];
  /** Sent as `Authorization: Bearer <token>` (needed only when the server's routes require it). */
  readonly token?: string;
  /** Segment tags to start buffering at once (`ready()` resolves when they are). */
  readonly tags?: readonly string[];
  /** Batch size: a number is the first batch's size; an object sets the adaptive bounds. */
  readonly batch?: number | BatchOptions;
  /** Timeout of one HTTP request in ms (default 2000). */
  readonly timeoutMs?: number;
  /** Retries on 503/429 and connection errors (default 6 attempts, 50 ms doubling to 2 s, full jitter). */
  readonly retry?: RetryOptions;
  /**
   * `segment` (default): batches from `GET /v1/segment/{tag}?count=N`, buffered locally.
   * `leaf`: one `GET /api/segment/get/{tag}` per ID (Leaf's route), no buffering:
   * for servers or proxies that only speak Leaf's API.
   */
  readonly mode?: 'segment' | 'leaf';
  /** The fetch to use (default: Node's global fetch). */
  readonly fetch?: typeof fetch;
  /**
   * The reserve per segment tag, used only when no server answers (default on:
   * 60 s of the observed rate, 100..100,000 IDs). `false` turns it off.
   */
  readonly reserve?: boolean | ReserveOptions;
  /**
   * Use the fallback space of tags whose servers declare one (`fallback-tags`;
   * docs/operations.md#fallback-space): a worker id is leased per tag while
   * servers answer, and once the reserve is spent the client issues IDs from
   * 2^62 on its own until that lease ends. Needs the reserve. Default false.
   */
  readonly fallback?: boolean;
  /**
   * Names this client on the servers' status page, where the reserves it took
   * are listed (printable ASCII without spaces, 1-100 characters; default
   * `$HOSTNAME:<pid>`, `client:<pid>` without HOSTNAME).
   */
  readonly name?: string;
  /** Called when a tag starts serving from its reserve, runs it dry, or has it back. Exceptions are ignored. */
  readonly onReserve?: (e: ReserveEvent) => void;
  /**
   * Time, timers and randomness (default the system's): a test or a
   * simulator injects its own to drive the client (docs/architecture.md).
   * The clock's wall reading aligns fallback IDs on the store's clock; its
   * monotonic reading times batches, cool-downs and probes.
   */
  readonly clock?: Clock;
  readonly timers?: Timers;
  /** For the retries' jitter. */
  readonly random?: Random;
}

/** A tag's reserve and its outage state. */
class TagReserve {
  readonly ids = new RangeSet();
  /** The size the reserve is kept at. */
  target = 0;
  /** A reserve was taken at least once (before that, failures behave as without a reserve). */
  held = false;
  /** The last fetch for the tag: no server answered. */
  down = false;
  lastError: unknown;
  /** When this outage first needed the reserve (monotonic ms), if it did. */
  since: number | undefined;
  /** The outage's events already sent (each once per outage). */
  readonly sent = new Set<OutageState>();
  /** The reserve was used in this outage: 'replenished' is due once it is full again. */
  owesReplenished = false;
  refilling: Promise<void> | undefined;
  nextProbe = 0;
}

type OutageState = 'using' | 'fallback' | 'exhausted';

/** A tag's fallback lease (option `fallback`). */
class TagFallback {
  /** The store's clock is clock.now() + offset (measured at the last lease answer). */
  offset = 0;
  readonly issuer: FallbackIssuer;
  held: { owner: string; workerId: number; generation: number } | undefined;
  /** The servers have no fallback space for the tag: never asked again. */
  disabled = false;
  leasing: Promise<void> | undefined;
  /** Monotonic ms when the lease is asked for (again). */
  renewAt = 0;

  constructor(clock: Clock) {
    this.issuer = new FallbackIssuer(() => clock.now() + this.offset);
  }
}

export interface SnowflakeOptions {
  /** Layout name (default: the server's default layout). */
  readonly layout?: string;
}

export interface UuidOptions {
  /** 7 (time-ordered, default) or 4 (random). */
  readonly version?: 7 | 4;
}

export class SequoiaClient {
  private readonly transport: Transport;
  private readonly buffers = new Map<string, TagBuffer>();
  private lastTag: string | undefined;
  private lastBuffer: TagBuffer | undefined;
  private readonly policy: BatchPolicy;
  private readonly leaf: boolean;
  private readonly controller = new AbortController();
  private readonly warm: readonly string[];
  private closing: Promise<void> | undefined;
  private readonly reservePolicy: (ReservePolicy & { readonly probeMs: number }) | undefined;
  private readonly reserves = new Map<string, TagReserve>();
  private readonly onReserve: ((e: ReserveEvent) => void) | undefined;
  private servedFromReserve = 0;
  private servedFromFallback = 0;
  private readonly fallbacks = new Map<string, TagFallback>();
  private readonly useFallback: boolean;
  /** Marks reserve batches, so the servers' status page shows who holds reserves. */
  private readonly reserveQuery: string;
  private refusals = 0;
  private msOnReserveDone = 0;
  /** Tags the servers last answered TAG_NOT_FOUND for while IDs of them are still held. */
  private readonly missing = new Set<string>();
  private readonly clock: Clock;
  private readonly timers: Timers;

  constructor(opts: ClientOptions) {
    const clock = (this.clock = opts.clock ?? systemClock);
    this.timers = opts.timers ?? systemTimers;
    const random = opts.random ?? systemRandom;
    const urls = opts.urls ?? (opts.url !== undefined ? [opts.url] : []);
    if (urls.length === 0) throw new InvalidArgumentError('createClient needs `url` or `urls`');
    const timeoutMs = opts.timeoutMs ?? 2000;
    checkInt('timeoutMs', timeoutMs, 1, 600_000);
    const retry = {
      attempts: opts.retry?.attempts ?? 6,
      baseDelayMs: opts.retry?.baseDelayMs ?? 50,
      maxDelayMs: opts.retry?.maxDelayMs ?? 2000,
    };
    checkInt('retry.attempts', retry.attempts, 1, 1000);
    checkInt('retry.baseDelayMs', retry.baseDelayMs, 0, 600_000);
    checkInt('retry.maxDelayMs', retry.maxDelayMs, 0, 600_000);
    const b: BatchOptions = typeof opts.batch === 'number' ? { initial: opts.batch } : (opts.batch ?? {});
    const max = b.max ?? 50_000;
    const min = b.min ?? Math.min(10, max);
    const initial = b.initial ?? Math.min(Math.max(100, min), max);
    checkInt('batch.max', max, 1, 1_000_000);
    checkInt('batch.min', min, 1, max);
    checkInt('batch.initial', initial, min, max);
    const targetMs = b.targetMs ?? 1000;
    checkInt('batch.targetMs', targetMs, 1, 3_600_000);
    this.policy = { minBatch: min, maxBatch: max, initialBatch: initial, targetMs };
    if (opts.mode !== undefined && opts.mode !== 'segment' && opts.mode !== 'leaf') {
      throw new InvalidArgumentError(`mode must be 'segment' or 'leaf', got ${JSON.stringify(opts.mode)}`);
    }
    this.leaf = opts.mode === 'leaf';
    if (opts.reserve === false) this.reservePolicy = undefined;
    else {
      const r: ReserveOptions = opts.reserve === true || opts.reserve === undefined ? {} : opts.reserve;
      const rmax = r.max ?? 100_000;
      const rmin = r.min ?? Math.min(100, rmax);
      const seconds = r.seconds ?? 60;
      const probeMs = r.probeMs ?? 1000;
      checkInt('reserve.max', rmax, 1, 1_000_000);
      checkInt('reserve.min', rmin, 1, rmax);
      checkInt('reserve.seconds', seconds, 1, 86_400);
      checkInt('reserve.probeMs', probeMs, 1, 600_000);
      this.reservePolicy = { seconds, min: rmin, max: rmax, probeMs };
    }
    this.onReserve = opts.onReserve;
    this.useFallback = opts.fallback === true && this.reservePolicy !== undefined;
    const name = opts.name ?? defaultClientName();
    if (!/^[\x21-\x7e]{1,100}$/.test(name)) throw new InvalidArgumentError('name must be 1-100 printable ASCII characters without spaces');
    this.reserveQuery = `&reserve=1&client=${encodeURIComponent(name)}`;
    this.transport = new Transport({
      urls,
      token: opts.token,
      timeoutMs,
      retry,
      fetch: opts.fetch ?? globalThis.fetch,
      signal: this.controller.signal,
      random: () => randomUnit(random),
      clock,
      timers: this.timers,
    });
    this.warm = opts.tags ?? [];
    if (!this.leaf)
      for (const t of this.warm)
        this.buffer(t)
          .load()
          .catch(() => undefined);
  }

  /** Resolves when every tag named in `tags` has IDs buffered; rejects with the first fetch error. */
  async ready(): Promise<void> {
    if (this.leaf) return;
    await Promise.all(
      this.warm.map(async (t) => {
        const b = this.buffer(t);
        while (b.available === 0) {
          if (this.controller.signal.aborted) throw closedError();
          await b.load();
        }
      }),
    );
  }

  /**
   * The next ID of a segment tag. Resolves at once from the local buffer;
   * waits for a fetch only when both batches are empty.
   *
   * @example
   * const client = createClient({ url: 'http://127.0.0.1:8080' });
   * const id = await client.next('order'); // 1n
   */
  next(tag: string): Promise<bigint> {
    if (this.leaf) return this.leafNext(tag);
    let b = this.buffers.get(tag);
    if (b === undefined) {
      try {
        b = this.buffer(tag);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    const v = b.take();
    if (v !== undefined) return Promise.resolve(v);
    return this.waitNext(b, this.reserves.get(tag));
  }

  /** next() as a decimal string. */
  async nextString(tag: string): Promise<string> {
    return (await this.next(tag)).toString();
  }

  /**
   * An ID from the local buffer, synchronously, or undefined when it is empty
   * (a fetch is then started, so a later call finds IDs). Always undefined in
   * leaf mode and after close().
   */
  tryNext(tag: string): bigint | undefined {
    // Callers mostly ask for the same tag again: one string compare instead of a Map look-up.
    if (tag === this.lastTag) return (this.lastBuffer as TagBuffer).take();
    const b = this.buffers.get(tag);
    if (b !== undefined) {
      this.lastTag = tag;
      this.lastBuffer = b;
      return b.take();
    }
    if (this.leaf || this.controller.signal.aborted) return undefined;
    this.buffer(tag).take(); // validates the tag and starts the first fetch
    return undefined;
  }

  /** IDs of a segment tag buffered locally right now (0 for a tag not used yet, and in leaf mode). */
  buffered(tag: string): number {
    return this.buffers.get(tag)?.available ?? 0;
  }

  /**
   * n IDs of a segment tag (1..1,000,000): what the buffer holds, the rest
   * fetched directly. All or nothing: on failure no ID is returned (the ones
   * taken are left unused: a gap).
   */
  async nextBatch(tag: string, n: number): Promise<bigint[]> {
    checkInt('n', n, 1, 1_000_000);
    if (this.leaf) {
      const out: bigint[] = [];
      for (let i = 0; i < n; i++) out.push(await this.leafNext(tag));
      return out;
    }
    const b = this.buffer(tag);
    const r = this.reserves.get(tag);
    const out = b.takeMany(n);
    if (out.length === n) return out;
    if (r !== undefined && r.held && r.down) return this.batchFromReserve(b, r, out, n);
    const chunks: Promise<bigint[]>[] = [];
    for (let left = n - out.length; left > 0; left -= MAX_COUNT) chunks.push(this.fetchIds(tag, Math.min(left, MAX_COUNT)));
    try {
      for (const ids of await Promise.all(chunks)) for (const id of ids) out.push(id);
    } catch (e) {
      if (r !== undefined && !this.controller.signal.aborted && isNoServerAnswer(e)) {
        this.noServer(r, e);
        if (r.held) return this.batchFromReserve(b, r, out, n);
      }
      this.notFound(tag, e);
      throw e;
    }
    this.serverAnswered(tag);
    return out;
  }

  /**
   * Counters for export (IDs served from a reserve, time on it, refusals) and
   * each tag's buffer, reserve and state.
   */
  stats(): ClientStats {
    const now = monotonicMs(this.clock);
    let ms = this.msOnReserveDone;
    const tags: Record<string, TagStats> = {};
    for (const [tag, b] of this.buffers) {
      const r = this.reserves.get(tag);
      if (r?.since !== undefined) ms += now - r.since;
      const state = this.missing.has(tag)
        ? 'missing'
        : r === undefined || r.since === undefined
          ? 'serving'
          : r.sent.has('exhausted')
            ? 'exhausted'
            : r.sent.has('fallback')
              ? 'fallback'
              : 'using';
      const f = this.fallbacks.get(tag)?.held;
      tags[tag] = {
        buffered: b.available,
        reserve: r?.ids.size ?? 0,
        reserveTarget: r?.target ?? 0,
        state,
        ...(f !== undefined ? { fallbackWorkerId: f.workerId } : {}),
      };
    }
    return {
      servedFromReserve: this.servedFromReserve,
      servedFromFallback: this.servedFromFallback,
      msOnReserve: Math.round(ms),
      refusals: this.refusals,
      tags,
    };
  }

  /** One Snowflake-family ID from `GET /v1/snowflake`. */
  async snowflake(opts: SnowflakeOptions = {}): Promise<bigint> {
    const q = opts.layout === undefined ? '' : `&layout=${encodeURIComponent(opts.layout)}`;
    const body = parseJson(await this.transport.get(`/v1/snowflake?count=1${q}`)) as { ids?: unknown };
    return onlyId(body.ids, 'snowflake');
  }

  /**
   * Reports a business unique-key conflict on `id` of segment tag `tag` (your
   * database refused a row because the key already existed): the server
   * counts it (sequoia_business_conflicts_total, which pages), logs it and
   * shows the tag red. Needs a client token that grants the tag, or the admin
   * token. Pair it with `isUniqueViolation(err)`. An `id` that is no ID (not
   * 0..2^63-1) rejects with INVALID_ARGUMENT, a tag that does not exist with
   * TAG_NOT_FOUND; neither is counted.
   */
  async reportConflict(
    tag: string,
    id: bigint | number | string,
    detail?: string,
  ): Promise<{ tag: string; id: string; conflicts: number }> {
    checkTag(tag);
    const body: { id: string; detail?: string } = { id: String(id) };
    if (detail !== undefined) body.detail = detail.slice(0, 1000);
    return parseJson(await this.transport.post(`/v1/tags/${encodeURIComponent(tag)}/conflicts`, body)) as {
      tag: string;
      id: string;
      conflicts: number;
    };
  }

  /** One UUID (v7 by default) from `GET /v1/uuid`, in its canonical text form. */
  async uuid(opts: UuidOptions = {}): Promise<string> {
    const version = opts.version ?? 7;
    if (version !== 7 && version !== 4) throw new InvalidArgumentError('version must be 7 or 4');
    const body = parseJson(await this.transport.get(`/v1/uuid?version=${version}&count=1`)) as { ids?: unknown };
    const id = Array.isArray(body.ids) ? body.ids[0] : undefined;
    if (typeof id !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) {
      throw new SequoiaError('INTERNAL', 'the server answered a malformed UUID');
    }
    return id;
  }

  /**
   * Stops the client: in-flight requests and backoff waits are aborted, every
   * pending call rejects with STORE_UNAVAILABLE ("client closed"), buffered IDs
   * are dropped (a gap), and no timer is left behind. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.controller.abort();
      const loads = [...this.buffers.values()].map((b) => b.loading).filter((p) => p !== undefined);
      for (const r of this.reserves.values()) {
        if (r.refilling !== undefined) loads.push(r.refilling);
        if (r.since !== undefined) this.msOnReserveDone += monotonicMs(this.clock) - r.since;
        r.since = undefined;
        r.ids.clear(); // an unused reserve becomes a gap (the store has no give-back of a client's range)
      }
      for (const b of this.buffers.values()) b.clear(); // also cancels scheduled prefetches
      this.buffers.clear();
      this.lastTag = undefined;
      this.lastBuffer = undefined;
      await Promise.allSettled(loads);
    })();
    return this.closing;
  }

  private buffer(tag: string): TagBuffer {
    const b = this.buffers.get(tag);
    if (b !== undefined) return b;
    if (this.controller.signal.aborted) throw closedError();
    checkTag(tag);
    const nb = new TagBuffer(
      tag,
      this.policy,
      (t, n) => this.bufferFetch(t, n),
      () => monotonicMs(this.clock),
      this.timers,
    );
    this.buffers.set(tag, nb);
    if (this.reservePolicy !== undefined) this.reserves.set(tag, new TagReserve());
    if (this.useFallback) this.fallbacks.set(tag, new TagFallback(this.clock));
    return nb;
  }

  private async waitNext(b: TagBuffer, r: TagReserve | undefined): Promise<bigint> {
    b.waiting++;
    try {
      for (;;) {
        if (this.controller.signal.aborted) throw closedError();
        if (r !== undefined && r.held && r.down) return this.fromReserve(b, r);
        try {
          await b.load();
        } catch (e) {
          // No server answered: the loop goes on to the reserve (bufferFetch marked the tag down).
          if (r !== undefined && r.held && r.down && !this.controller.signal.aborted) continue;
          throw e;
        }
        const v = b.take();
        if (v !== undefined) return v;
      }
    } finally {
      b.waiting--;
    }
  }

  /** The buffer's fetch: records whether a server answered, for the reserve. */
  private async bufferFetch(tag: string, count: number): Promise<bigint[]> {
    let ids: bigint[];
    try {
      ids = await this.fetchBatch(tag, count);
    } catch (e) {
      const r = this.reserves.get(tag);
      if (r !== undefined && !this.controller.signal.aborted && isNoServerAnswer(e)) this.noServer(r, e);
      this.notFound(tag, e);
      throw e;
    }
    this.serverAnswered(tag);
    return ids;
  }

  /**
   * After TAG_NOT_FOUND: a tag of which nothing is held is forgotten (stats()
   * would otherwise list a tag that does not exist, and every mistyped name
   * would keep a buffer for the client's life); one still holding IDs (deleted
   * on the server) keeps them and is `missing` until a server serves it again.
   */
  private notFound(tag: string, e: unknown): void {
    if (!(e instanceof SequoiaError) || e.code !== 'TAG_NOT_FOUND') return;
    const b = this.buffers.get(tag);
    if (b === undefined) return;
    const held = b.available > 0 || (this.reserves.get(tag)?.ids.size ?? 0) > 0 || this.fallbacks.get(tag)?.held !== undefined;
    if (held) {
      this.missing.add(tag);
      return;
    }
    b.clear();
    this.buffers.delete(tag);
    this.reserves.delete(tag);
    this.fallbacks.delete(tag);
    this.missing.delete(tag);
    if (this.lastBuffer === b) {
      this.lastTag = undefined;
      this.lastBuffer = undefined;
    }
  }

  private noServer(r: TagReserve, e: unknown): void {
    r.down = true;
    r.lastError = e;
    r.nextProbe = monotonicMs(this.clock) + (this.reservePolicy?.probeMs ?? 0);
  }

  /** A server answered for the tag: the outage (if any) is over, and the reserve is topped up to its target. */
  private serverAnswered(tag: string): void {
    this.missing.delete(tag);
    const r = this.reserves.get(tag);
    if (r === undefined || this.controller.signal.aborted) return;
    if (r.down) {
      r.down = false;
      r.sent.clear();
      if (r.since !== undefined) this.msOnReserveDone += monotonicMs(this.clock) - r.since;
      r.since = undefined;
    }
    this.refill(tag, r);
    this.leaseFallback(tag);
  }

  /**
   * Takes or renews the tag's fallback lease while servers answer (every
   * third of the lease). The answer also aligns the client's clock on the
   * store's: fallback milliseconds are the store's, so the next holder of the
   * worker id, granted after this lease's end, starts after every one of ours.
   */
  private leaseFallback(tag: string): void {
    const f = this.fallbacks.get(tag);
    if (f === undefined || f.disabled || f.leasing !== undefined || monotonicMs(this.clock) < f.renewAt) return;
    const body = f.held === undefined ? {} : { ...f.held, lastTick: f.issuer.lastTick };
    const sent = this.clock.now();
    f.leasing = this.transport
      .post(`/v1/fallback/${encodeURIComponent(tag)}/lease`, body)
      .then(
        (text) => {
          const received = this.clock.now();
          const l = parseJson(text);
          const n = (k: string): number => {
            const v = l[k];
            if (typeof v !== 'number' || !Number.isSafeInteger(v))
              throw new SequoiaError('INTERNAL', `the server answered a malformed fallback lease (${k})`);
            return v;
          };
          const [workerId, generation, grantedAtMs, expiresAtMs, notBeforeMs, notAfterMs] = [
            'workerId',
            'generation',
            'grantedAtMs',
            'expiresAtMs',
            'notBeforeMs',
            'notAfterMs',
          ].map(n) as [number, number, number, number, number, number];
          if (typeof l.owner !== 'string') throw new SequoiaError('INTERNAL', 'the server answered a malformed fallback lease (owner)');
          const ttl = expiresAtMs - grantedAtMs;
          // The store's clock is known to within half the round trip; the lease's margin must cover that.
          if (received - sent > (expiresAtMs - notAfterMs) / 2) {
            f.renewAt = monotonicMs(this.clock) + 1000;
            return;
          }
          f.offset = grantedAtMs - (sent + received) / 2;
          f.held = { owner: l.owner, workerId, generation };
          f.issuer.setGrant({ workerId, notBeforeMs, notAfterMs });
          f.renewAt = monotonicMs(this.clock) + ttl / 3;
        },
        (e: unknown) => {
          if (e instanceof SequoiaError && e.code === 'NOT_FOUND') f.disabled = true;
          else f.renewAt = monotonicMs(this.clock) + 1000;
        },
      )
      .catch(() => {
        f.renewAt = monotonicMs(this.clock) + 1000;
      })
      .finally(() => {
        f.leasing = undefined;
      });
  }

  /** n IDs from the tag's fallback space, or undefined when it has none or its lease has ended. */
  private takeFallback(tag: string, n: number): bigint[] | undefined {
    const f = this.fallbacks.get(tag);
    if (f?.held === undefined) return undefined;
    const out: bigint[] = [];
    for (let i = 0; i < n; i++) {
      const id = f.issuer.next();
      if (id === undefined) return undefined; // the lease's end: the ones taken are a gap
      out.push(id);
    }
    return out;
  }

  private refill(tag: string, r: TagReserve): void {
    const policy = this.reservePolicy;
    if (policy === undefined || r.refilling !== undefined) return;
    r.target = reserveTarget(policy, this.buffers.get(tag)?.ratePerSecond ?? 0, r.target);
    const want = r.target - r.ids.size;
    if (want <= 0) {
      this.replenished(tag, r);
      return;
    }
    // A normal batch request: these IDs are this client's alone, like any batch.
    r.refilling = this.fetchBatch(tag, want, this.reserveQuery).then(
      (ids) => {
        r.refilling = undefined;
        if (this.controller.signal.aborted) return;
        r.ids.addIds(ids);
        r.held = true;
        if (r.down)
          this.serverAnswered(tag); // a server answered this very request
        else if (r.ids.size >= r.target) this.replenished(tag, r);
      },
      () => {
        r.refilling = undefined; // tried again after the next batch a server answers
      },
    );
  }

  private replenished(tag: string, r: TagReserve): void {
    if (!r.owesReplenished) return;
    r.owesReplenished = false;
    this.emit({ tag, state: 'replenished', remaining: r.ids.size });
  }

  /** An ID from the reserve while no server answers, or the RESERVE_EXHAUSTED refusal. */
  private fromReserve(b: TagBuffer, r: TagReserve): bigint {
    return this.takeReserve(b, r, 1)[0]!;
  }

  /**
   * n IDs from the reserve, all or nothing: when it holds fewer, the call is
   * refused with RESERVE_EXHAUSTED and what is left stays for smaller calls.
   * Asks the servers again (in the background) at most every probeMs.
   */
  private takeReserve(b: TagBuffer, r: TagReserve, n: number): bigint[] {
    const now = monotonicMs(this.clock);
    if (now >= r.nextProbe && b.loading === undefined) {
      r.nextProbe = now + (this.reservePolicy?.probeMs ?? 0);
      b.load().catch(() => undefined); // success ends the outage (bufferFetch → serverAnswered)
    }
    r.since ??= now;
    const ids = r.ids.takeMany(n);
    if (ids !== undefined) {
      this.servedFromReserve += n;
      return this.servedInOutage(b.tag, r, 'using', ids);
    }
    const fb = this.takeFallback(b.tag, n);
    if (fb !== undefined) {
      this.servedFromFallback += n;
      return this.servedInOutage(b.tag, r, 'fallback', fb);
    }
    this.refusals++;
    if (r.ids.size === 0) this.emitOnce(b.tag, r, 'exhausted');
    throw reserveExhausted(b.tag, r.lastError);
  }

  /** IDs served while no server answers (from the reserve or the fallback space, as `state` says). */
  private servedInOutage(tag: string, r: TagReserve, state: OutageState, ids: bigint[]): bigint[] {
    r.owesReplenished = true;
    this.emitOnce(tag, r, state);
    return ids;
  }

  /** The outage event `state`, sent the first time the outage reaches it. */
  private emitOnce(tag: string, r: TagReserve, state: OutageState): void {
    if (r.sent.has(state)) return;
    r.sent.add(state);
    this.emit({ tag, state, remaining: r.ids.size });
  }

  /** nextBatch's rest from the reserve (the IDs already taken from the buffer are a gap if it is refused). */
  private batchFromReserve(b: TagBuffer, r: TagReserve, out: bigint[], n: number): bigint[] {
    for (const id of this.takeReserve(b, r, n - out.length)) out.push(id);
    return out;
  }

  private emit(e: ReserveEvent): void {
    if (this.onReserve === undefined) return;
    try {
      this.onReserve(e);
    } catch {
      // the app's callback must not break issuing
    }
  }

  /** A buffer's batch: above the server's 10,000 per request, parallel requests; partial success keeps what came. */
  private async fetchBatch(tag: string, count: number, query = ''): Promise<bigint[]> {
    if (count <= MAX_COUNT) return this.fetchIds(tag, count, query);
    const chunks: Promise<bigint[]>[] = [];
    for (let left = count; left > 0; left -= MAX_COUNT) chunks.push(this.fetchIds(tag, Math.min(left, MAX_COUNT), query));
    const settled = await Promise.allSettled(chunks);
    const out: bigint[] = [];
    let firstError: unknown;
    for (const s of settled) {
      if (s.status === 'fulfilled') for (const id of s.value) out.push(id);
      else firstError ??= s.reason;
    }
    if (out.length === 0) throw firstError;
    return out;
  }

  private async fetchIds(tag: string, count: number, query = ''): Promise<bigint[]> {
    const body = parseJson(await this.transport.get(`/v1/segment/${tag}?count=${count}${query}`)) as { ids?: unknown };
    const raw = body.ids;
    if (!Array.isArray(raw) || raw.length !== count) throw new SequoiaError('INTERNAL', `the server answered a malformed batch for ${tag}`);
    const ids = new Array<bigint>(count);
    for (let i = 0; i < count; i++) ids[i] = decimal(raw[i]);
    return ids;
  }

  private async leafNext(tag: string): Promise<bigint> {
    checkTag(tag);
    return decimal(await this.transport.get(`/api/segment/get/${tag}`));
  }
}

/** Creates a client; see ClientOptions for every option and its default. */
export function createClient(opts: ClientOptions): SequoiaClient {
  return new SequoiaClient(opts);
}

function checkTag(tag: string): void {
  if (!isValidTag(tag)) {
    throw new InvalidArgumentError(`tag ${TAG_RULE}`);
  }
  // The WHATWG URL parser (fetch's) resolves `.` and `..` path segments, so these two legal tags cannot be addressed.
  if (tag === '.' || tag === '..') throw new InvalidArgumentError(`the tag ${JSON.stringify(tag)} cannot be used in a URL path; rename it`);
}

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max)
    throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got ${String(v)}`);
}

function parseJson(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object') return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new SequoiaError('INTERNAL', 'the server answered malformed JSON');
}

function decimal(v: unknown): bigint {
  const id = typeof v === 'string' ? parseDecimalId(v) : undefined;
  if (id === undefined) throw new SequoiaError('INTERNAL', `the server answered a malformed ID: ${String(v).slice(0, 40)}`);
  return id;
}

function onlyId(ids: unknown, what: string): bigint {
  if (!Array.isArray(ids) || ids.length !== 1) throw new SequoiaError('INTERNAL', `the server answered a malformed ${what} answer`);
  return decimal(ids[0]);
}

/**
 * The client's name on the status page when none is given. The client stays
 * free of Node-only modules (it runs wherever fetch does), so the host name
 * comes from the environment (containers and Kubernetes set HOSTNAME).
 */
function defaultClientName(): string {
  const proc = (globalThis as { process?: { pid?: number; env?: Record<string, string | undefined> } }).process;
  return `${proc?.env?.HOSTNAME || 'client'}:${proc?.pid ?? 0}`.replace(/[^\x21-\x7e]/g, '_').slice(0, 100);
}
