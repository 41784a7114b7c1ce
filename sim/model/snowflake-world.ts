/**
 * The simulated snowflake cluster: 3-5 servers, each of one or two worker
 * processes running the production SnowflakeService on the production lease
 * worker-id provider (LeaseWorkerIdProvider inside TickReservingProvider, as
 * app/worker-id-providers.ts wires them), leasing from one simulated lease
 * store (lease-store.ts) and reserving ticks in its server's state dir
 * (tick-dir.ts). Each seed draws the clock policy (one for all, or one per
 * server), the lease length, and maybe two operator mistakes: two servers
 * given one state dir, two servers given the same fixed worker id.
 *
 * Checked on every ID the generators issue and every answer:
 * - no snowflake ID answered twice per layout;
 * - no two holders of one worker id overlap: an ID issued on a worker id by a
 *   holder after the store granted that id to another (the lease's fencing);
 * - a CLOCK_MOVED_BACKWARDS refusal only when every worker id the refusing
 *   generator may switch to (its primary; under backup-worker its backups
 *   too) has really been used (issued on, or reserved by a holder that never
 *   gave it back cleanly) up to the clock's tick: else the refusal is false;
 * - only documented refusal codes; and liveness once every fault healed.
 */
import { SequoiaError } from '../../src/core/errors.js';
import type { Clock } from '../../src/core/clock.js';
import type { Random } from '../../src/core/random.js';
import { SnowflakeGenerator, type ClockPolicy } from '../../src/core/snowflake/generator.js';
import { defineLayout, getLayout, type Layout } from '../../src/core/snowflake/layout.js';
import { LeaseWorkerIdProvider } from '../../src/adapters/lease/lease-worker-id-provider.js';
import { TickReservingProvider } from '../../src/adapters/state-dir/tick-reserving-provider.js';
import { SnowflakeService } from '../../src/service/snowflake-service.js';
import type { LeasedWorker } from '../../src/service/snowflake-lease.js';
import { HostClock } from '../engine/clock.js';
import type { Prng } from '../engine/prng.js';
import { Proc, type Scheduler } from '../engine/scheduler.js';
import { Checker } from './checker.js';
import { Coverage } from './coverage.js';
import { LeaseStoreModel } from './lease-store.js';
import { Lifecycle } from './lifecycle.js';
import { healNetwork, networkFault } from './network.js';
import { TickDir } from './tick-dir.js';

/** Fault kinds and operator actions of the snowflake world, for the coverage report. */
export const SF_ACTIONS = [
  'sf-crash',
  'sf-pause',
  'sf-pause-past-lease',
  'sf-clean-restart',
  'sf-rolling-restart',
  'sf-lease-store-unavailable',
  'sf-lease-store-lose-answers',
  'sf-lease-store-delay-answers',
  'sf-clock-step-forward',
  'sf-clock-step-back',
  'sf-clock-day-ahead',
  'sf-clock-freeze',
] as const;
type SfAction = (typeof SF_ACTIONS)[number];
const POLICIES: readonly ClockPolicy[] = ['reject', 'wait', 'logical', 'backup-worker'];
/** Set-ups counted once per seed that has them (each clock policy; the two mistakes). */
const SF_SETUPS = [...POLICIES.map((p) => `sf-policy-${p}`), 'sf-shared-state-dir', 'sf-same-fixed-id'] as const;
/** Everything the coverage report counts for this world. */
export const SF_COVERAGE: readonly string[] = [...SF_ACTIONS, ...SF_SETUPS];

/** Codes a snowflake server may answer while faults last (DESIGN.md's table). */
export const SF_REFUSALS = new Set(['CLOCK_MOVED_BACKWARDS', 'LEASE_LOST', 'STORE_UNAVAILABLE', 'SHUTTING_DOWN']);

/** The worker id both servers are given by mistake (within both layouts' ranges). */
const FIXED_ID = 7;
const DAY_MS = 86_400_000;

/**
 * Two layouts: twitter (the default: 1,024 worker ids, 4,096 IDs a ms) and a
 * small one whose 32 worker ids are taken over often and whose 64 IDs a ms a
 * batch can use up (the logical policy borrows ticks there).
 */
function layouts(): Map<string, Layout> {
  const small = defineLayout(
    {
      name: 'small',
      version: 1,
      epochMs: Date.UTC(2025, 0, 1),
      unitMs: 1,
      timeBits: 52,
      fields: [
        { name: 'worker', bits: 5, role: 'node' },
        { name: 'sequence', bits: 6, role: 'sequence' },
      ],
    },
    { nowMs: Date.UTC(2026, 0, 1) },
  );
  return new Map([['small', small]]);
}
const LAYOUTS = ['twitter', 'small'] as const;

/**
 * A process's clock: its host's, with a monotonic reading that also moves
 * a little per read (CPU time passes while code runs): a generator spinning
 * for the next tick then stops after its 3 ms instead of a million turns.
 */
class ProcClock implements Clock {
  private last = Number.NEGATIVE_INFINITY;
  constructor(private readonly host: HostClock) {}
  now(): number {
    return this.host.now();
  }
  monotonic(): number {
    this.last = Math.max(this.host.monotonic(), this.last + 1e-3);
    return this.last;
  }
}

function randomOf(r: Prng): Random {
  return {
    fill(bytes: Uint8Array): void {
      for (let i = 0; i < bytes.length; i++) bytes[i] = r.u32() & 255;
    },
  };
}

interface SfWorker {
  readonly name: string;
  proc: Proc;
  service: SnowflakeService | undefined;
  state: 'starting' | 'up' | 'closing' | 'down';
}

interface SfServer {
  readonly name: string;
  readonly clock: HostClock;
  readonly dir: TickDir;
  readonly policy: ClockPolicy;
  readonly fixed: number | undefined;
  readonly workers: SfWorker[];
  generation: number;
}

/** One holding of a worker id (a grant: owner and generation) and what it did. */
interface Holding {
  maxReserved: number;
  /** Given back while still its holder's. */
  clean: boolean;
  /** Reserved after its clean release (a renewal racing the release). */
  lateReserved: number;
}

/** Per (id space, worker id): the holder the store granted it to last, the highest tick issued on it, its holdings. */
interface IdState {
  current: string | undefined;
  grantedAt: number;
  issuedMax: number;
  readonly holdings: Map<string, Holding>;
}

export interface SnowflakeWorldOptions {
  readonly chaosMs: number;
  readonly healMs: number;
}

export class SnowflakeWorld {
  readonly leases: LeaseStoreModel;
  readonly checker: Checker;
  readonly servers: SfServer[] = [];
  readonly coverage = new Coverage(SF_COVERAGE);
  readonly ttlMs: number;
  private readonly layouts = layouts();
  private readonly random: Random;
  private readonly weights = new Map<SfAction, number>();
  private readonly gapMs: number;
  private readonly clockOwner = new WeakMap<Clock, string>();
  /** Per `owner/space/workerId`: the generation of its latest grant. */
  private readonly grantGen = new Map<string, number>();
  private readonly ids = new Map<string, IdState>();
  private readonly seen = new Map<string, Map<string, string>>();
  private readonly lastOk = new Map<string, number>();
  private readonly lastErr = new Map<string, string>();
  private healedAt: number | undefined;
  private uninstall: (() => void) | undefined;
  private readonly life: Lifecycle<SfServer, SfWorker>;

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    private readonly opts: SnowflakeWorldOptions,
  ) {
    this.leases = new LeaseStoreModel(sched, rng.fork());
    this.checker = new Checker(() => sched.now);
    this.random = randomOf(rng.fork());
    const mix = rng.fork();
    for (const a of SF_ACTIONS) this.weights.set(a, mix.pick([0, 1, 1, 2, 4, 8]));
    this.gapMs = mix.pick([10, 25, 60]);
    this.ttlMs = mix.pick([1000, 2000, 5000]);
    this.life = new Lifecycle(
      sched,
      rng,
      this.servers,
      (s, w) => this.boot(s, w),
      (a) => this.count(`sf-${a}`),
    );
    this.leases.events = {
      granted: (owner, space, workerId, generation) => this.granted(owner, space, workerId, generation),
      released: (lease, held) => {
        const h = this.holding(lease.space, lease.workerId, `${lease.owner}/${lease.space}/${lease.workerId}#g${lease.generation}`);
        if (held) h.clean = true;
      },
    };
  }

  private count(k: string): void {
    this.coverage.count(k);
  }

  /** Mean gap between request arrivals, ms. */
  get requestGapMs(): number {
    return this.gapMs;
  }

  setUp(): void {
    const r = this.rng;
    const n = r.int(3, 5);
    const onePolicy = r.chance(0.7) ? r.pick(POLICIES) : undefined;
    const sameFixed = r.chance(0.25);
    const sharedDir = r.chance(0.25);
    let shared: TickDir | undefined;
    for (let i = 0; i < n; i++) {
      const name = `f${i}`;
      const fixed = sameFixed && i < 2 ? FIXED_ID : undefined;
      let policy = onePolicy ?? r.pick(POLICIES);
      // A fixed id with backup-worker is refused at start by design (one id cannot have a backup).
      if (fixed !== undefined && policy === 'backup-worker') policy = 'wait';
      let dir = new TickDir(name, this.sched, r.fork());
      if (sharedDir && (i === 1 || i === 2)) dir = shared ??= dir;
      const server: SfServer = { name, clock: new HostClock(this.sched, r.int(0, 1e6)), dir, policy, fixed, workers: [], generation: 0 };
      const w = r.pick([1, 1, 2]);
      for (let k = 0; k < w; k++)
        server.workers.push({ name: `${name}.w${k}`, proc: new Proc(`${name}.w${k}`), service: undefined, state: 'down' });
      this.servers.push(server);
    }
    for (const p of new Set(this.servers.map((s) => s.policy))) this.count(`sf-policy-${p}`);
    if (sameFixed) this.count('sf-same-fixed-id');
    if (sharedDir) this.count('sf-shared-state-dir');
    this.instrument();
    for (const s of this.servers) for (const w of s.workers) this.boot(s, w);
    this.sched.log(
      `setup ttl ${this.ttlMs} servers=${this.servers.map((s) => `${s.name}x${s.workers.length}:${s.policy}${s.fixed === undefined ? '' : `:static${s.fixed}`}:${s.dir.name}`).join(',')}`,
    );
  }

  /** Watches every ID a generator issues (the take, not the answer: a batch may fail after some). */
  private instrument(): void {
    const proto = SnowflakeGenerator.prototype;
    const take = proto.take;
    const issued = (g: SnowflakeGenerator): void => this.issued(g);
    proto.take = function (this: SnowflakeGenerator, shard?: number) {
      const id = take.call(this, shard);
      if (typeof id === 'string') issued(this);
      return id;
    };
    this.uninstall = () => {
      proto.take = take;
    };
  }

  /** Ends the run's instrumentation. */
  close(): void {
    this.uninstall?.();
    this.uninstall = undefined;
  }

  private idState(space: string, workerId: number): IdState {
    const k = `${space}/${workerId}`;
    let st = this.ids.get(k);
    if (!st) this.ids.set(k, (st = { current: undefined, grantedAt: 0, issuedMax: -1, holdings: new Map() }));
    return st;
  }

  private holding(space: string, workerId: number, holder: string): Holding {
    const st = this.idState(space, workerId);
    let h = st.holdings.get(holder);
    if (!h) st.holdings.set(holder, (h = { maxReserved: -1, clean: false, lateReserved: -1 }));
    return h;
  }

  private holderOf(owner: string, space: string, workerId: number): string {
    const k = `${owner}/${space}/${workerId}`;
    return `${k}#g${this.grantGen.get(k) ?? 0}`;
  }

  private granted(owner: string, space: string, workerId: number, generation: number): void {
    const k = `${owner}/${space}/${workerId}`;
    this.grantGen.set(k, generation);
    const st = this.idState(space, workerId);
    st.current = `${k}#g${generation}`;
    st.grantedAt = this.sched.now;
    this.holding(space, workerId, st.current);
  }

  private reserved(owner: string, space: string, workerId: number, tick: number): void {
    const h = this.holding(space, workerId, this.holderOf(owner, space, workerId));
    if (h.clean) h.lateReserved = Math.max(h.lateReserved, tick);
    else h.maxReserved = Math.max(h.maxReserved, tick);
  }

  private issued(g: SnowflakeGenerator): void {
    const owner = this.clockOwner.get((g as unknown as { clock: Clock }).clock);
    if (owner === undefined) return;
    const workerId = g.workerId;
    const space = g.layout.spaceKey;
    const st = this.idState(space, workerId);
    const tick = g.lastIssuedTickOf(workerId);
    if (tick > st.issuedMax) st.issuedMax = tick;
    const holder = this.holderOf(owner, space, workerId);
    if (holder !== st.current) {
      this.checker.fail(
        'lease-overlap',
        `${holder} issued on worker id ${workerId} (${g.layout.name}, tick ${tick}) after the store granted it to ${st.current} at ${st.grantedAt.toFixed(0)} ms`,
      );
    }
  }

  /**
   * The highest tick a correct implementation could make a holder of
   * `workerId` start after: every tick issued on it, and every reservation of
   * a holder that did not give it back cleanly (a crash, a lost lease), but
   * not of `except` (the holding asking).
   */
  private legitFloor(space: string, workerId: number, except: string): number {
    const st = this.idState(space, workerId);
    let floor = st.issuedMax;
    for (const [holder, h] of st.holdings) {
      if (holder === except) continue;
      floor = Math.max(floor, h.lateReserved, h.clean ? -1 : h.maxReserved);
    }
    return floor;
  }

  /** Starts a worker process: its own provider, lease link and service; the server's state dir and clock. */
  private boot(s: SfServer, w: SfWorker): void {
    const proc = new Proc(`${w.name}#${++s.generation}`);
    w.proc = proc;
    w.state = 'starting';
    const clock = new ProcClock(s.clock);
    this.clockOwner.set(clock, proc.name);
    const timers = this.sched.timersFor(proc);
    const lease = new LeaseWorkerIdProvider(this.leases.linkFor(proc), {
      ttlMs: this.ttlMs,
      owner: proc.name,
      clock,
      timers,
      random: this.random,
      ledgerRetentionMs: 0,
      ...(s.fixed === undefined ? {} : { fixedWorkerId: s.fixed, kind: 'static+lease(sim)' }),
    });
    const ticks = s.dir.view(proc);
    const record = ticks.recordTick;
    ticks.recordTick = (space, workerId, tick, exact) => {
      if (!exact) this.reserved(proc.name, space, workerId, tick);
      return record(space, workerId, tick, exact);
    };
    const service = new SnowflakeService({
      provider: new TickReservingProvider(lease, ticks),
      defaultLayout: 'twitter',
      layouts: this.layouts,
      clockPolicy: s.policy,
      maxWaitMs: 1000,
      clock,
      timers,
      random: this.random,
    });
    w.service = service;
    // A server whose snowflake gets no worker id still starts (the id is asked for again by requests).
    const started = (): void => {
      if (w.proc !== proc || !proc.alive) return;
      w.state = 'up';
      this.sched.log(`up ${proc.name}`);
    };
    service.start().then(started, started);
  }

  /** One client request to a random worker that is up. */
  request(): void {
    const r = this.rng;
    const ups = this.servers.flatMap((s) => s.workers.filter((w) => w.state === 'up' && !w.proc.paused).map((w) => ({ s, w })));
    if (ups.length === 0) return;
    const { s, w } = r.pick(ups);
    this.ask(s, w, r.chance(0.6) ? 'twitter' : 'small', r.chance(0.2) ? r.int(2, 25) : 1);
  }

  private ask(s: SfServer, w: SfWorker, layout: string, count: number): void {
    const service = w.service;
    if (!service) return;
    const proc = w.proc;
    const settle = (ids: string[]): void => {
      if (!proc.alive) return;
      this.sched.log(`ans ${proc.name} ${layout} ${ids[0]}${ids.length === 1 ? '' : `+${ids.length}`}`);
      let seen = this.seen.get(layout);
      if (!seen) this.seen.set(layout, (seen = new Map()));
      for (const id of ids) {
        this.checker.answered++;
        const prev = seen.get(id);
        if (prev !== undefined) this.checker.fail('duplicate', `${layout} ${id} answered twice: by ${prev}, again by ${proc.name}`);
        else seen.set(id, `${proc.name} at ${this.sched.now.toFixed(0)} ms`);
      }
      this.lastOk.set(`${w.name}/${layout}`, this.sched.now);
    };
    const refuse = (e: unknown): void => {
      if (!proc.alive) return;
      const code = e instanceof SequoiaError ? e.code : 'NOT_A_SEQUOIA_ERROR';
      this.sched.log(`err ${proc.name} ${layout} ${code}`);
      this.lastErr.set(`${w.name}/${layout}`, code);
      if (!SF_REFUSALS.has(code))
        this.checker.fail('unexpected-error', `${proc.name} ${layout}: ${code}: ${e instanceof Error ? e.message : String(e)}`);
      if (code === 'CLOCK_MOVED_BACKWARDS') this.checkClockRefusal(s, w, layout, (e as Error).message);
    };
    try {
      const r = count === 1 ? service.next(layout) : service.nextMany(layout, count);
      if (r instanceof Promise) (r as Promise<string | string[]>).then((v) => settle(Array.isArray(v) ? v : [v]), refuse);
      else settle(Array.isArray(r) ? r : [r]);
    } catch (e) {
      refuse(e);
    }
  }

  /** A clock refusal must have every worker id the generator may issue on used up to the clock's tick. */
  private checkClockRefusal(s: SfServer, w: SfWorker, layout: string, message: string): void {
    const lw = (w.service as unknown as { workers: Map<string, LeasedWorker> } | undefined)?.workers.get(layout);
    if (!lw || lw.lost) return;
    const g = lw.generator;
    const space = g.layout.spaceKey;
    const tick = g.currentTick();
    // A clock that did not reach the next tick (frozen) is refused on the id in use; one behind switches ids under backup-worker.
    const stalled = g.lastIssuedTickOf(g.workerId) <= tick;
    const ids = stalled ? [g.workerId] : g.clockPolicy === 'backup-worker' ? g.workerIdList : g.workerIdList.slice(0, 1);
    for (const id of ids) {
      const floor = this.legitFloor(space, id, this.holderOf(w.proc.name, space, id));
      if (floor < tick) {
        this.checker.fail(
          'false-clock-refusal',
          `${w.proc.name} (${s.policy}) refused ${layout} (${message}) at tick ${tick}, but worker id ${id} it holds was used only up to tick ${floor}`,
        );
        return;
      }
    }
  }

  /** One fault or operator action drawn from the seed. */
  chaos(): void {
    const r = this.rng;
    const kinds = SF_ACTIONS.filter((a) => (this.weights.get(a) ?? 0) > 0);
    if (kinds.length === 0) return;
    const total = kinds.reduce((a, k) => a + (this.weights.get(k) ?? 0), 0);
    let x = r.float() * total;
    const kind = kinds.find((k) => (x -= this.weights.get(k) ?? 0) < 0) ?? (kinds[kinds.length - 1] as SfAction);
    const s = r.pick(this.servers);
    this.act(kind, s);
  }

  private act(kind: SfAction, s: SfServer): void {
    const r = this.rng;
    switch (kind) {
      case 'sf-crash':
        return this.crash(s);
      case 'sf-pause':
      case 'sf-pause-past-lease':
        return this.pause(s, kind === 'sf-pause' ? r.int(100, Math.floor(this.ttlMs / 2)) : this.ttlMs + r.int(200, 2 * this.ttlMs), kind);
      case 'sf-clean-restart':
        return this.life.cleanRestart(s);
      case 'sf-rolling-restart':
        return this.life.rollingRestart();
      case 'sf-lease-store-unavailable':
      case 'sf-lease-store-lose-answers':
      case 'sf-lease-store-delay-answers':
        return this.storeFault(kind);
      case 'sf-clock-step-forward':
      case 'sf-clock-day-ahead': {
        const ms = kind === 'sf-clock-day-ahead' ? DAY_MS : r.int(1000, 120_000);
        this.count(kind);
        s.clock.step(ms);
        this.sched.log(`FAULT ${kind} ${s.name} +${ms}ms`);
        return;
      }
      case 'sf-clock-step-back': {
        // Half the time NTP puts a clock that ran ahead right again; else a step back of seconds to minutes.
        const ms = s.clock.offsetMs > 0 && r.chance(0.5) ? s.clock.offsetMs : r.int(1000, 120_000);
        this.count(kind);
        s.clock.step(-ms);
        this.sched.log(`FAULT ${kind} ${s.name} -${ms}ms`);
        return;
      }
      case 'sf-clock-freeze': {
        if (s.clock.frozenAt !== undefined) return;
        this.count(kind);
        s.clock.freeze();
        this.sched.log(`FAULT sf-clock-freeze ${s.name}`);
        this.sched.after(r.int(500, 10_000), undefined, () => s.clock.thaw());
        return;
      }
    }
  }

  private crash(s: SfServer): void {
    if (s.workers.some((w) => w.state === 'down')) return;
    this.count('sf-crash');
    this.sched.log(`FAULT sf-crash ${s.name}`);
    this.life.crash(s, (procs) => s.dir.crash(procs));
  }

  private pause(s: SfServer, ms: number, kind: SfAction): void {
    if (this.life.pause(s, () => ms, `FAULT ${kind} ${s.name} ${ms}ms`)) this.count(kind);
  }

  private storeFault(kind: SfAction): void {
    this.count(kind);
    const ms = this.rng.int(300, 2 * this.ttlMs);
    this.sched.log(`FAULT ${kind} ${ms}ms`);
    networkFault(
      this.sched,
      this.leases.faults,
      kind === 'sf-lease-store-unavailable' ? 'unavailable' : kind === 'sf-lease-store-lose-answers' ? 'lose-answers' : 'delay-answers',
      ms,
    );
  }

  /** Ends every fault: the lease store answers, clocks run and read true time again (NTP fixed), paused processes resume. */
  heal(): void {
    this.healedAt = this.sched.now;
    this.sched.log('HEAL');
    healNetwork(this.leases.faults);
    for (const s of this.servers) {
      s.clock.thaw();
      s.clock.step(-s.clock.offsetMs);
      for (const w of s.workers) if (w.proc.paused) this.sched.resume(w.proc);
    }
  }

  /** After the heal: each worker is asked each layout every half second. */
  probe(): void {
    for (const s of this.servers) for (const w of s.workers) if (w.state === 'up') for (const l of LAYOUTS) this.ask(s, w, l, 1);
  }

  /**
   * Liveness: at the end, every worker answered every layout in the last 4 s,
   * unless its refusal is one the faults explain: CLOCK_MOVED_BACKWARDS (each
   * was checked against the ticks really used), or LEASE_LOST for a fixed id
   * that another live process holds (the mistake).
   */
  checkLiveness(): void {
    const end = this.sched.now;
    for (const s of this.servers) {
      for (const w of s.workers) {
        for (const l of LAYOUTS) {
          const at = this.lastOk.get(`${w.name}/${l}`);
          if (at !== undefined && at >= end - 4000) continue;
          const err = this.lastErr.get(`${w.name}/${l}`);
          if (err === 'CLOCK_MOVED_BACKWARDS') continue;
          if (err === 'LEASE_LOST' && s.fixed !== undefined) {
            const space = getLayout(l, this.layouts).spaceKey;
            const holder = this.leases.holder(space, s.fixed);
            if (holder !== undefined && holder !== w.proc.name) continue;
          }
          this.checker.fail(
            'liveness',
            `${w.name} (${w.state}, ${s.policy}) answered no ${l} in the last 4 s of the ${this.opts.healMs} ms after every fault healed at ${this.healedAt} (last refusal ${err ?? 'none'})`,
          );
        }
      }
    }
  }
}
