/**
 * The multi-store world: 2-3 servers, each running the production IdService
 * over the production MultiSegmentStore of 2-3 member stores (each a
 * StoreModel: the memory store behind the simulated network), with faults of
 * one member alone: frozen (its calls hang, then are applied when it thaws),
 * unavailable, or restored to an earlier snapshot (that member's rows only).
 * Servers crash and restart with their state dirs. At the end every fault
 * heals, the operator fences every tag above all the set and the marks know,
 * and every server must answer every tag again.
 *
 * Checks: no ID answered twice for a tag within one lineage of its member
 * (the residue class id mod N names the member; a member restored alone
 * starts a new lineage of its class), nor twice by one server across
 * lineages (its marks, one per class, must see it); STORE_ROLLBACK_DETECTED
 * only for a tag some member really rolled back; only documented refusals.
 */
import { SequoiaError } from '../../src/core/errors.js';
import { idToBigInt, type Id } from '../../src/core/id.js';
import { MultiSegmentStore } from '../../src/adapters/multi/multi-segment-store.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { IdService } from '../../src/service/id-service.js';
import { HostClock } from '../engine/clock.js';
import type { Prng } from '../engine/prng.js';
import { Proc, type Scheduler } from '../engine/scheduler.js';
import { Checker, REFUSALS } from './checker.js';
import { Coverage } from './coverage.js';
import { StateDir } from './state-dir.js';
import { StoreModel, type Delivered } from './store.js';
import { runPhases, worldResult } from '../phases.js';
import type { WorldResult } from '../worlds.js';

export const MULTI_ACTIONS = ['multi-member-freeze', 'multi-member-unavailable', 'multi-member-restore', 'multi-crash'] as const;
type MultiAction = (typeof MULTI_ACTIONS)[number];

const TAGS = ['a', 'b'];
const STEP = 10;
const CHAOS_MS = 20_000;
const HEAL_MS = 12_000;

interface Member {
  readonly model: StoreModel;
  frozen: boolean;
  thaw: () => void;
  thawed: Promise<void>;
}

interface MServer {
  readonly name: string;
  readonly clock: HostClock;
  readonly dir: StateDir;
  proc: Proc;
  service: IdService | undefined;
  up: boolean;
  generation: number;
}

/** A member's link that holds every call while the member is frozen (a hung database: applied once it thaws). */
function gated(m: Member, link: SegmentStore): SegmentStore {
  return new Proxy(link, {
    get(target, p) {
      const v: unknown = Reflect.get(target, p, target);
      if (typeof v !== 'function') return v;
      const fn = v as (...a: unknown[]) => Promise<unknown>;
      return (...a: unknown[]) => (m.frozen ? m.thawed.then(() => fn.apply(target, a)) : fn.apply(target, a));
    },
  });
}

class MultiWorld {
  readonly checker: Checker;
  readonly coverage = new Coverage<MultiAction>(MULTI_ACTIONS);
  readonly members: Member[] = [];
  readonly servers: MServer[] = [];
  /** Per member and tag: the units delivered to each process, with their lineage. */
  private readonly delivered = new Map<string, Delivered[]>();
  private readonly seen = new Map<string, Map<bigint, Array<{ server: string; lineage: number }>>>();
  private readonly lastOk = new Map<string, number>();
  fencedAt: number | undefined;

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {
    this.checker = new Checker(() => sched.now);
    const n = rng.int(2, 3);
    for (let i = 0; i < n; i++) {
      const model = new StoreModel(sched, rng.fork());
      const m: Member = { model, frozen: false, thaw: () => {}, thawed: Promise.resolve() };
      model.onDelivered = (d) => {
        const key = `${i}/${d.proc.name}/${d.tag}`;
        let list = this.delivered.get(key);
        if (!list) this.delivered.set(key, (list = []));
        list.push(d);
        if (list.length > 2048) list.splice(0, 512);
      };
      this.members.push(m);
    }
  }

  /** The set as the operator's tools reach it: the members' stores directly. */
  direct(): MultiSegmentStore {
    return new MultiSegmentStore(
      this.members.map((m) => m.model.db),
      { now: () => this.sched.now },
    );
  }

  async setUp(): Promise<void> {
    const set = this.direct();
    await set.init();
    for (const tag of TAGS) await set.createTag({ tag, step: STEP, start: 0n });
    for (let i = 0; i < this.rng.int(2, 3); i++) {
      const name = `m${i}`;
      const s: MServer = {
        name,
        clock: new HostClock(this.sched, this.rng.int(0, 1e6)),
        dir: new StateDir(name, this.sched, this.rng.fork()),
        proc: new Proc(`${name}#0`),
        service: undefined,
        up: false,
        generation: 0,
      };
      this.servers.push(s);
      this.boot(s);
    }
    this.sched.log(`multi setup members=${this.members.length} servers=${this.servers.length}`);
  }

  private boot(s: MServer): void {
    const proc = (s.proc = new Proc(`${s.name}#${++s.generation}`));
    const store = new MultiSegmentStore(
      this.members.map((m) => gated(m, m.model.linkFor(proc))),
      { clock: s.clock },
    );
    const service = new IdService({
      store,
      marks: s.dir.view(proc),
      clock: s.clock,
      timers: this.sched.timersFor(proc),
      allocator: { maxStep: STEP * 4, loadTimeoutMs: 3000, minRetryDelayMs: 100, maxRetryDelayMs: 2000 },
      refreshIntervalMs: 20_000,
    });
    s.service = service;
    service.start().then(
      () => {
        if (s.proc !== proc) return;
        s.up = true;
        this.sched.log(`up ${proc.name}`);
      },
      () => {
        if (s.proc === proc && proc.alive) this.sched.after(1000, undefined, () => s.proc === proc && proc.alive && this.boot(s));
      },
    );
  }

  ask(s: MServer, tag: string, count: number): void {
    const service = s.service;
    if (!s.up || !service || s.proc.paused) return;
    const proc = s.proc;
    const settle = (got: Id | Id[]): void => {
      if (!proc.alive) return;
      const ids = (Array.isArray(got) ? got : [got]).map(idToBigInt);
      this.sched.log(`ans ${proc.name} ${tag} ${ids[0]}+${ids.length}`);
      this.judge(s, proc, tag, ids);
      this.lastOk.set(`${s.name}/${tag}`, this.sched.now);
    };
    const refuse = (e: unknown): void => {
      if (!proc.alive) return;
      const code = e instanceof SequoiaError ? e.code : 'NOT_A_SEQUOIA_ERROR';
      this.sched.log(`err ${proc.name} ${tag} ${code}`);
      if (!REFUSALS.has(code)) this.checker.fail('unexpected-error', `${proc.name} ${tag}: ${code}: ${String(e)}`);
      if (code === 'STORE_ROLLBACK_DETECTED' && this.members.every((m) => (m.model.rollbacks.get(tag) ?? 0) === 0))
        this.checker.fail('false-refusal', `${proc.name} refused ${tag} as rolled back, but no member went back: ${String(e)}`);
    };
    try {
      const r = count === 1 ? service.next(tag) : service.nextMany(tag, count);
      if (r instanceof Promise) (r as Promise<Id | Id[]>).then(settle, refuse);
      else settle(r);
    } catch (e) {
      refuse(e);
    }
  }

  private judge(s: MServer, proc: Proc, tag: string, ids: readonly bigint[]): void {
    const n = BigInt(this.members.length);
    let byTag = this.seen.get(tag);
    if (!byTag) this.seen.set(tag, (byTag = new Map()));
    const server = `${s.name}@${s.dir.lost}`;
    for (const id of ids) {
      this.checker.answered++;
      const i = Number(id % n);
      const unit = id / n;
      const list = this.delivered.get(`${i}/${proc.name}/${tag}`) ?? [];
      let lineage = -1;
      for (let k = list.length - 1; k >= 0; k--) {
        const d = list[k] as Delivered;
        if (unit >= d.start && unit < d.end) {
          lineage = d.lineage;
          break;
        }
      }
      if (lineage < 0) this.checker.fail('ledger', `${proc.name} answered ${tag} ${id}: no unit member ${i} gave it holds it`);
      const prev = byTag.get(id);
      const clash = prev?.find((p) => p.lineage === lineage || p.server === server);
      if (clash)
        this.checker.fail(
          'duplicate',
          `${tag} ${id} answered twice: by ${clash.server} (lineage ${clash.lineage}), again by ${proc.name} (lineage ${lineage})`,
        );
      if (prev) prev.push({ server, lineage });
      else byTag.set(id, [{ server, lineage }]);
    }
  }

  private count(a: MultiAction): void {
    this.coverage.count(a);
  }

  async chaos(): Promise<void> {
    const r = this.rng;
    const mi = r.int(0, this.members.length - 1);
    const m = this.members[mi] as Member;
    const kind = r.pick(MULTI_ACTIONS);
    switch (kind) {
      case 'multi-member-freeze': {
        if (m.frozen) return;
        this.count(kind);
        m.frozen = true;
        m.thawed = new Promise((resolve) => (m.thaw = resolve));
        const ms = r.int(500, 8000);
        this.sched.log(`FAULT multi-member-freeze #${mi} ${ms}ms`);
        this.sched.after(ms, undefined, () => this.unfreeze(m));
        return;
      }
      case 'multi-member-unavailable': {
        this.count(kind);
        const ms = r.int(300, 5000);
        m.model.faults.unavailable = true;
        this.sched.log(`FAULT multi-member-unavailable #${mi} ${ms}ms`);
        this.sched.after(ms, undefined, () => (m.model.faults.unavailable = false));
        return;
      }
      case 'multi-member-restore': {
        const did = await m.model.restore(r.pick(TAGS), r.int(500, 8000));
        if (!did) return;
        this.count(kind);
        this.sched.log(`FAULT multi-member-restore #${mi} ${did}`);
        return;
      }
      case 'multi-crash': {
        const s = r.pick(this.servers);
        if (!s.up) return;
        this.count(kind);
        this.sched.log(`FAULT multi-crash ${s.name}`);
        s.proc.alive = false;
        s.up = false;
        s.service = undefined;
        s.dir.crash();
        this.sched.after(r.int(200, 3000), undefined, () => this.boot(s));
        return;
      }
    }
  }

  private unfreeze(m: Member): void {
    m.frozen = false;
    m.thaw();
  }

  /** Every fault ends; then the operator fences every tag above what the set and every server's marks know. */
  heal(): void {
    this.sched.log('HEAL');
    for (const m of this.members) {
      if (m.frozen) this.unfreeze(m);
      m.model.faults.unavailable = false;
    }
    this.sched.after(3000, undefined, () => {
      void (async () => {
        const set = this.direct();
        for (const tag of TAGS) {
          let to = (await set.getTag(tag))?.maxId ?? 0n;
          for (const s of this.servers)
            for (const [k, v] of s.dir.durable)
              if ((k === tag || k.startsWith(`${tag}/`) || k.startsWith(`${tag}#`)) && v.mark > to) to = v.mark;
          await set.fence(tag, to + 1n);
          this.sched.log(`OP fence ${tag} to ${to + 1n}`);
        }
        this.fencedAt = this.sched.now;
      })();
    });
  }

  checkLiveness(): void {
    if (this.fencedAt === undefined) return this.checker.fail('liveness', 'the heal fence did not finish');
    for (const s of this.servers)
      for (const tag of TAGS) {
        const at = this.lastOk.get(`${s.name}/${tag}`);
        if (at === undefined || at < this.fencedAt)
          this.checker.fail('liveness', `multi server ${s.name} answered no ${tag} after the heal`);
      }
  }
}

export async function runMultiWorld(sched: Scheduler, root: Prng): Promise<WorldResult> {
  const w = new MultiWorld(sched, root.fork());
  await w.setUp();
  const traffic = root.fork();
  const faults = root.fork();
  const arrive = (): void => {
    w.ask(traffic.pick(w.servers), traffic.pick(TAGS), traffic.chance(0.2) ? traffic.int(2, 25) : 1);
    if (sched.now < CHAOS_MS + HEAL_MS) sched.after(traffic.float() * 40, undefined, arrive);
  };
  sched.after(0, undefined, arrive);
  const draws = await runPhases(sched, {
    chaosMs: CHAOS_MS,
    healMs: HEAL_MS,
    faults,
    gapMs: [300, 2000],
    chaos: () => void w.chaos(),
    snapshot: () => {
      for (const m of w.members) void m.model.snapshot();
    },
    heal: () => w.heal(),
    probe: () => {
      for (const s of w.servers) for (const tag of TAGS) w.ask(s, tag, 1);
    },
    failed: () => w.checker.findings.length > 0,
    checkLiveness: () => w.checkLiveness(),
  });
  return worldResult('multi', sched, w, draws);
}
