/**
 * The simulated cluster: N servers (3-5), each of 1, 2 or 4 worker processes
 * running the production IdService over one state dir, all on one store;
 * clients sending requests; faults and operator actions drawn from the seed;
 * then a heal phase that must see every worker answer every tag again.
 */
import { SequoiaError } from '../../src/core/errors.js';
import { idToBigInt, type Id } from '../../src/core/id.js';
import { IdService } from '../../src/service/id-service.js';
import { nameHistory } from '../../src/service/tag-history.js';
import { HostClock } from '../engine/clock.js';
import type { Prng } from '../engine/prng.js';
import { Proc, type Scheduler } from '../engine/scheduler.js';
import { Checker, REFUSALS } from './checker.js';
import { Coverage } from './coverage.js';
import { Lifecycle } from './lifecycle.js';
import { healNetwork, networkFault } from './network.js';
import { StateDir } from './state-dir.js';
import { StoreModel } from './store.js';

/** `c` is quiet (a twentieth of the requests): its servers hold its ranges idle for seconds, as most tags of a real cluster do. */
export const BUFFERED_TAGS = ['a', 'b', 'c'] as const;
export const STRICT_TAG = 's';
const TAGS = [...BUFFERED_TAGS, STRICT_TAG];
const STEP = 10;
/** Tag generations come from the store's own randomness, not the seed: the trace leaves them out. */
const GENERATION = /\d{12,}/g;

/** Every fault kind and operator action, for the coverage report. */
export const ACTIONS = [
  'crash',
  'state-dir-lost',
  'pause',
  'clean-restart',
  'rolling-restart',
  'store-unavailable',
  'store-lose-answers',
  'store-delay-answers',
  'store-restore',
  'store-failover',
  'clock-step-forward',
  'clock-step-back',
  'clock-freeze',
  'tag-recreate',
  'tag-recreate-low',
  'fence',
] as const;
export type Action = (typeof ACTIONS)[number];
/**
 * What the coverage report counts too, not drawn by weight (adding to
 * ACTIONS would change every seed's draws): sequences following an action,
 * variants of one, and mistakes made at set-up. Each is drawn from the mix's
 * own streams, so a seed without it runs as before.
 * - `store-restore-with-ledger`: a `store-restore` that takes the ledger
 *   rows written since the snapshot too, as a whole-database restore would;
 * - `shared-state-dir`: servers s1 and s2 given one state dir by mistake,
 *   modelled as if its lock were defeated (a network filesystem).
 */
export const SEQUENCES = ['recreate-then-deploy', 'store-restore-with-ledger', 'shared-state-dir'] as const;

/**
 * Swarm testing: each seed draws its own workload and fault mix (some
 * actions off, others frequent; one server taking most requests; a quiet
 * tag), so a rare combination has seeds where it is common.
 */
export interface Mix {
  /** Weights of a, b, c, s. */
  readonly tagWeights: readonly number[];
  /** Share of requests sent to s0 (sticky clients) on top of an even spread. */
  readonly sticky: number;
  /** Mean gap between request arrivals, ms. */
  readonly gapMs: number;
  /** Steps fixed at the stored step, or doubling up to 4x. */
  readonly maxStep: number;
  readonly actionWeights: ReadonlyMap<Action, number>;
  /**
   * Share of the low re-creations made as in issue 28: one range below the
   * old max_id (above every ID the operator saw in use), one request to see
   * the new creation answer, then a deploy (every worker closes cleanly at
   * once, giving its tails back, and starts again).
   */
  readonly recreateThenDeploy: number;
  /** Draws of that sequence: their own stream, so a seed without it draws as before. */
  readonly follow: Prng;
  /** Share of the store restores that take the ledger rows since the snapshot too. */
  readonly restoreWithLedger: number;
  /** Whether s1 and s2 share one state dir (the lock defeated). */
  readonly sharedStateDir: boolean;
  /** Draws of the variants above: their own stream. */
  readonly variants: Prng;
}

export function drawMix(r: Prng): Mix {
  const weights = new Map<Action, number>();
  for (const a of ACTIONS) weights.set(a, r.pick([0, 1, 1, 2, 4, 8]));
  return {
    tagWeights: [r.int(1, 10), r.int(0, 10), r.chance(0.5) ? 0.5 : r.int(0, 3), r.int(0, 10)],
    sticky: r.pick([0, 0, 0, 0.8, 1]),
    gapMs: r.pick([10, 25, 60]),
    maxStep: r.chance(0.5) ? STEP : STEP * 4,
    actionWeights: weights,
    // Drawn last, from the mix's own stream: the draws above (and every other stream) are as before.
    recreateThenDeploy: r.pick([0, 0.5, 1]),
    follow: r.fork(),
    // Drawn after `follow` was forked: every stream above is as before.
    restoreWithLedger: r.pick([0, 0, 0.5, 1]),
    sharedStateDir: r.chance(0.2),
    variants: r.fork(),
  };
}

function weighted<T>(r: Prng, items: readonly T[], weights: readonly number[]): T | undefined {
  const total = weights.reduce((a, b) => a + b, 0);
  if (total <= 0) return undefined;
  let x = r.float() * total;
  for (let i = 0; i < items.length; i++) {
    x -= weights[i] ?? 0;
    if (x < 0) return items[i];
  }
  return items[items.length - 1];
}

interface Worker {
  readonly name: string;
  proc: Proc;
  service: IdService | undefined;
  state: 'starting' | 'up' | 'closing' | 'down';
  /** Per tag: the last time it answered (liveness). */
  readonly lastOk: Map<string, number>;
}

interface Server {
  readonly name: string;
  readonly clock: HostClock;
  readonly dir: StateDir;
  readonly workers: Worker[];
  generation: number;
}

export interface ClusterOptions {
  readonly chaosMs: number;
  readonly healMs: number;
}

export class Cluster {
  readonly store: StoreModel;
  readonly checker: Checker;
  readonly servers: Server[] = [];
  readonly coverage = new Coverage<string>([...ACTIONS, ...SEQUENCES]);
  private healedAt: number | undefined;
  private fencedAt: number | undefined;
  /** Scratch lists of `request` (the workers it may pick from), kept to spare an allocation per request. */
  private readonly upServers: Server[] = [];
  private readonly upWorkers: Worker[] = [];
  private readonly life: Lifecycle<Server, Worker>;

  readonly mix: Mix;

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    private readonly opts: ClusterOptions,
  ) {
    this.mix = drawMix(rng.fork());
    this.store = new StoreModel(sched, rng.fork());
    this.checker = new Checker(() => sched.now);
    this.store.onDelivered = (d) => {
      this.sched.log(`range ${d.proc.name} ${d.tag} [${d.start},${d.end}) L${d.lineage}`);
      this.checker.delivered(d, this.store.hasAllocation(d));
    };
    this.life = new Lifecycle(
      sched,
      rng,
      this.servers,
      (s, w) => this.boot(s, w),
      (a) => this.count(a),
    );
  }

  /** Counts an action (or a named sequence of one, such as `recreate-then-deploy`) for the coverage report. */
  private count(a: Action | (typeof SEQUENCES)[number]): void {
    this.coverage.count(a);
  }

  async setUp(): Promise<void> {
    const n = this.rng.int(3, 5);
    for (const tag of TAGS) await this.store.db.createTag({ tag, step: STEP, start: 0n });
    const shared = this.mix.sharedStateDir;
    for (let i = 0; i < n; i++) {
      const name = `s${i}`;
      const clock = new HostClock(this.sched, this.rng.int(0, 1e6));
      // Created (its stream forked) even when shared, so the draws stay as without the mistake.
      const own = new StateDir(name, this.sched, this.rng.fork());
      const dir = shared && i === 2 ? (this.servers[1] as Server).dir : own;
      const server: Server = { name, clock, dir, workers: [], generation: 0 };
      const w = this.rng.pick([1, 1, 2, 2, 2, 4]);
      for (let k = 0; k < w; k++)
        server.workers.push({
          name: `${name}.w${k}`,
          proc: new Proc(`${name}.w${k}`),
          service: undefined,
          state: 'down',
          lastOk: new Map(),
        });
      this.servers.push(server);
    }
    for (const s of this.servers) for (const w of s.workers) this.boot(s, w);
    this.sched.log(`setup servers=${this.servers.map((s) => `${s.name}x${s.workers.length}`).join(',')}`);
    if (shared) {
      this.count('shared-state-dir');
      this.sched.log('MISTAKE s1 and s2 share state dir s1');
    }
  }

  /** Starts a worker's IdService in a fresh process; retried while the store refuses. */
  private boot(s: Server, w: Worker): void {
    const proc = new Proc(`${w.name}#${++s.generation}`);
    w.proc = proc;
    w.state = 'starting';
    const service = new IdService({
      store: this.store.linkFor(proc),
      marks: s.dir.view(proc),
      clock: s.clock,
      timers: this.sched.timersFor(proc),
      allocator: { maxStep: this.mix.maxStep, loadTimeoutMs: 3000, minRetryDelayMs: 100, maxRetryDelayMs: 2000 },
      refreshIntervalMs: 20_000,
      strictTags: [STRICT_TAG],
    });
    w.service = service;
    service.start().then(
      () => {
        if (w.proc !== proc || !proc.alive) return;
        w.state = 'up';
        this.sched.log(`up ${proc.name}`);
      },
      () => {
        if (w.proc !== proc || !proc.alive) return;
        this.sched.after(1000, undefined, () => {
          if (w.proc === proc && proc.alive) this.boot(s, w);
        });
      },
    );
  }

  /** One client request to a random worker that is up. */
  request(): void {
    const r = this.rng;
    const tag = weighted(r, TAGS, this.mix.tagWeights) ?? 'a';
    const pool = r.chance(this.mix.sticky) ? [this.servers[0] as Server] : this.servers;
    const us = this.upServers;
    const uw = this.upWorkers;
    us.length = 0;
    uw.length = 0;
    for (const s of pool)
      for (const w of s.workers)
        if (w.state === 'up' && !w.proc.paused) {
          us.push(s);
          uw.push(w);
        }
    if (uw.length === 0) return;
    // As `r.pick` draws: one float, scaled to the list.
    const i = Math.floor(r.float() * uw.length);
    this.ask(us[i] as Server, uw[i] as Worker, tag, r.chance(0.2) ? r.int(2, 25) : 1);
  }

  private ask(s: Server, w: Worker, tag: string, count: number, answered?: (first: bigint) => void): void {
    const service = w.service;
    if (!service) return;
    const proc = w.proc;
    const strict = tag === STRICT_TAG;
    const lineage = this.store.lineage.get(tag) ?? 0;
    const bound = strict ? this.checker.strictBound(`${tag}#${lineage}`) : undefined;
    const settle = (ids: Id[]): void => {
      if (!proc.alive) return;
      const values = ids.map(idToBigInt);
      this.sched.log(`ans ${proc.name} ${tag} ${values.length === 1 ? values[0] : `${values[0]}+${values.length}`}`);
      const sameLineage = (this.store.lineage.get(tag) ?? 0) === lineage;
      const order = strict ? { key: `${tag}#${lineage}`, bound: sameLineage ? bound : undefined } : undefined;
      // Named by its state dir: servers sharing one by mistake share one guard, and are judged as one server.
      this.checker.answer(proc.name, `${s.dir.name}@${s.dir.lost}`, tag, values, s.dir.durable.get(tag)?.mark, order);
      if (answered) answered(values[0] as bigint);
      w.lastOk.set(tag, this.sched.now);
    };
    const refuse = (e: unknown): void => {
      if (!proc.alive) return;
      const code = e instanceof SequoiaError ? e.code : 'NOT_A_SEQUOIA_ERROR';
      this.sched.log(
        `err ${proc.name} ${tag} ${code}${code === 'STORE_ROLLBACK_DETECTED' ? ` ${(e as Error).message.replace(GENERATION, 'G')}` : ''}`,
      );
      if (!REFUSALS.has(code))
        this.checker.fail('unexpected-error', `${proc.name} ${tag}: ${code}: ${e instanceof Error ? e.message : String(e)}`);
      // Two servers on one dir are outside what Sequoia promises (the dir's lock refuses the second): a server
      // starting on it takes the dir as its own, and the other's answers in flight may trip it. Refusing is the
      // safe side; the checks that nothing repeats still hold (seed 123).
      const sharedDir = this.servers.some((o) => o !== s && o.dir === s.dir);
      if (code === 'STORE_ROLLBACK_DETECTED' && (this.store.rollbacks.get(tag) ?? 0) === 0 && !sharedDir) {
        this.checker.fail(
          'false-refusal',
          `${proc.name} refused ${tag} as rolled back, but the store never went back: ${(e as Error).message}`,
        );
      }
    };
    try {
      const r = count === 1 ? service.next(tag) : service.nextMany(tag, count);
      if (r instanceof Promise) (r as Promise<Id | Id[]>).then((v) => settle(Array.isArray(v) ? v : [v]), refuse);
      else settle(Array.isArray(r) ? r : [r]);
    } catch (e) {
      refuse(e);
    }
  }

  /** One fault or operator action drawn from the seed. */
  async chaos(): Promise<void> {
    const r = this.rng;
    const s = r.pick(this.servers);
    const kind = weighted(
      r,
      ACTIONS,
      ACTIONS.map((a) => this.mix.actionWeights.get(a) ?? 0),
    );
    if (kind === undefined) return;
    switch (kind) {
      case 'crash':
      case 'state-dir-lost': {
        if (s.workers.some((w) => w.state === 'down')) return;
        // A shared dir lives on the network filesystem, which neither goes down nor is lost with one server.
        const shared = this.servers.some((o) => o !== s && o.dir === s.dir);
        if (shared && kind === 'state-dir-lost') return;
        this.count(kind);
        this.sched.log(`FAULT ${kind} ${s.name}`);
        this.life.crash(s, () => {
          if (kind === 'state-dir-lost') s.dir.lose();
          else if (!shared) s.dir.crash();
        });
        return;
      }
      case 'pause':
        if (this.life.pause(s, () => r.int(500, 8000), `FAULT pause ${s.name}`)) this.count(kind);
        return;
      case 'clean-restart':
        return this.life.cleanRestart(s);
      case 'rolling-restart':
        return this.life.rollingRestart();
      case 'store-failover': {
        const lag = r.chance(0.2) ? r.int(50, 500) : r.int(1, 50);
        const did = await this.store.failover(lag);
        if (did.length === 0) return;
        this.count(kind);
        this.sched.log(`FAULT store-failover lag ${lag}ms: ${did.join(', ')}`);
        return;
      }
      case 'store-unavailable':
      case 'store-lose-answers':
      case 'store-delay-answers': {
        this.count(kind);
        const ms = r.int(300, 5000);
        this.sched.log(`FAULT ${kind} ${ms}ms`);
        networkFault(
          this.sched,
          this.store.faults,
          kind === 'store-unavailable' ? 'unavailable' : kind === 'store-lose-answers' ? 'lose-answers' : 'delay-answers',
          ms,
        );
        return;
      }
      case 'store-restore': {
        const v = this.mix.variants;
        const withLedger = this.mix.restoreWithLedger > 0 && v.chance(this.mix.restoreWithLedger);
        const did = await this.store.restore(r.pick(TAGS), r.int(500, 10_000), withLedger);
        if (!did) return;
        this.count(kind);
        if (withLedger) this.count('store-restore-with-ledger');
        this.sched.log(`FAULT store-restore${withLedger ? ' with ledger' : ''} ${did}`);
        return;
      }
      case 'clock-step-forward':
      case 'clock-step-back': {
        this.count(kind);
        const ms = r.chance(0.3) ? 86_400_000 : r.int(1000, 120_000);
        s.clock.step(kind === 'clock-step-back' ? -ms : ms);
        this.sched.log(`FAULT ${kind} ${s.name} ${ms}ms`);
        return;
      }
      case 'clock-freeze': {
        if (s.clock.frozenAt !== undefined) return;
        this.count(kind);
        s.clock.freeze();
        this.sched.log(`FAULT clock-freeze ${s.name}`);
        this.sched.after(r.int(500, 10_000), undefined, () => s.clock.thaw());
        return;
      }
      case 'tag-recreate':
      case 'tag-recreate-low':
        return this.recreate(r.pick(BUFFERED_TAGS), kind === 'tag-recreate-low');
      case 'fence':
        return this.fence(r.pick(TAGS));
    }
  }

  /**
   * The operator deletes a tag and creates it again: at the start the name's
   * history advises (`sequoia tag delete` prints it), or, by mistake, lower:
   * then the servers that served it refuse until a fence, and what a server
   * without marks hands out is a new lineage.
   */
  private async recreate(tag: string, low: boolean): Promise<void> {
    const db = this.store.db;
    const info = await db.getTag(tag);
    if (!info) return;
    this.count(low ? 'tag-recreate-low' : 'tag-recreate');
    await db.deleteTag(tag);
    this.sched.log(`OP delete ${tag} max_id ${info.maxId}`);
    this.sched.after(this.rng.int(100, 3000), undefined, () => {
      void db.ledgerTop(tag).then(async (top) => {
        const safe = nameHistory(tag, undefined, info.maxId, true, top).safeStart;
        const f = this.mix.follow;
        if (low && safe >= BigInt(STEP) && f.chance(this.mix.recreateThenDeploy)) return this.recreateThenDeploy(tag, safe);
        // Too low by mistake: as first created, or a max_id read off a stale listing.
        const stale = safe - BigInt(STEP * this.rng.pick([1, 1, 2, 3, 8]));
        const start = !low ? safe : this.rng.chance(0.3) || stale < 0n ? 0n : stale;
        await db.createTag({ tag, step: STEP, start });
        if (start < safe) this.store.bump(tag);
        this.sched.log(`OP create ${tag} start ${start} (safe ${safe})`);
        // Rolling restarts often follow an operator's change: they are what gives old ranges back.
        if (low && this.rng.chance(0.7)) this.sched.after(this.rng.int(100, 3000), undefined, () => this.life.rollingRestart());
      });
    });
  }

  /**
   * Issue 28's operator: the tag created again one range below its old
   * max_id (a prefetched range nobody served from yet lies there), checked
   * with one request, then the whole cluster redeployed: every worker
   * closes cleanly at once (giving back its tails) and starts again. A
   * give-back that ignored the generation lands in the new creation here.
   */
  private async recreateThenDeploy(tag: string, safe: bigint): Promise<void> {
    const f = this.mix.follow;
    const start = safe - BigInt(STEP);
    await this.store.db.createTag({ tag, step: STEP, start });
    this.store.bump(tag);
    this.count('recreate-then-deploy');
    this.sched.log(`OP create ${tag} start ${start} (safe ${safe}), then a deploy`);
    let deployed = false;
    const deploy = (): void => {
      if (deployed) return;
      deployed = true;
      this.sched.log('OP deploy');
      for (const s of this.servers) for (const w of s.workers) this.life.cleanRestart(s, w);
    };
    // The operator asks until the new creation answers (at most a few seconds), then deploys.
    let tries = 0;
    const check = (): void => {
      if (deployed) return;
      if (++tries > 40) return deploy();
      const ups = this.servers.flatMap((s) => s.workers.filter((w) => w.state === 'up' && !w.proc.paused).map((w) => ({ s, w })));
      if (ups.length > 0) {
        const { s, w } = f.pick(ups);
        this.ask(s, w, tag, 1, (id) => {
          if (id >= start) this.sched.after(f.int(0, 20), undefined, deploy);
        });
      }
      this.sched.after(f.int(20, 100), undefined, check);
    };
    check();
  }

  /** The operator's fence: to a bound above everything the store, its ledger and every server's marks know. */
  private async fence(tag: string): Promise<void> {
    const db = this.store.db;
    const info = await db.getTag(tag);
    if (!info) return;
    this.count('fence');
    const top = await db.ledgerTop(tag);
    let to = nameHistory(tag, info, info.maxId, true, top).safeStart;
    for (const s of this.servers) {
      const m = s.dir.durable.get(tag)?.mark;
      if (m !== undefined && m > to) to = m;
    }
    await db.fence(tag, to);
    await this.store.noteWrite(tag);
    this.sched.log(`OP fence ${tag} to ${to}`);
  }

  /** Ends every fault; the operator then fences every tag (after a restore one always does). */
  heal(): void {
    this.healedAt = this.sched.now;
    this.sched.log('HEAL');
    healNetwork(this.store.faults);
    for (const s of this.servers) {
      s.clock.thaw();
      for (const w of s.workers) if (w.proc.paused) this.sched.resume(w.proc);
    }
    // After the operator actions under way (a re-creation takes up to 3 s) have ended.
    this.sched.after(4000, undefined, () => {
      void (async () => {
        for (const tag of TAGS) await this.fence(tag);
        this.fencedAt = this.sched.now;
      })();
    });
  }

  /** After the heal: each worker is asked each tag every half second. */
  probe(): void {
    for (const s of this.servers) for (const w of s.workers) if (w.state === 'up') for (const tag of TAGS) this.ask(s, w, tag, 1);
  }

  /** Liveness: once healed and fenced, every worker answered every tag within the heal window. */
  checkLiveness(): void {
    if (this.fencedAt === undefined) {
      this.checker.fail('liveness', `the heal's fence did not finish (healed at ${this.healedAt})`);
      return;
    }
    for (const s of this.servers) {
      for (const w of s.workers) {
        for (const tag of TAGS) {
          const at = w.lastOk.get(tag);
          if (at === undefined || at < this.fencedAt) {
            this.checker.fail(
              'liveness',
              `${w.name} (${w.state}) answered no ${tag} in the ${this.opts.healMs} ms after every fault healed`,
            );
          }
        }
      }
    }
  }
}
