/**
 * The migration world: a peer's Leaf-style table (`leaf_alloc`: one row per
 * tag, `UPDATE … SET max_id = max_id + step` under the row's lock) that two
 * simulated Leaf servers keep allocating from, each with Leaf's double
 * buffer, while the operator runs `sequoia migrate` to a Sequoia store
 * (docs/migrate.md, "Leaving the old table"). Callers move to Sequoia
 * servers (the production IdService on the target) once the copy exists;
 * the Leaf servers keep answering from their buffers until they run dry.
 *
 * The production `migrate` opens SQL stores from URLs, so the world drives
 * its store-level steps directly: `sourceTagsOf` and `migrateTags` of
 * src/app/migrate.ts (the same code `migrate` runs after opening the stores)
 * against the simulated peer table (a RetiringStore) and the simulated
 * target (the memory store behind the simulated network, with its faults).
 * A run the target refuses halfway (after the row is retired) is run again,
 * as the command's message says; a later run must change nothing.
 *
 * Checks: no ID of a tag answered both by a Leaf server and by a Sequoia
 * server, nor twice by either side; the old table takes no range after its
 * row was retired; only documented refusals from the Sequoia servers.
 */
import { SequoiaError, TagNotFoundError } from '../../src/core/errors.js';
import { idToBigInt, type Id } from '../../src/core/id.js';
import { DEFAULT_MIGRATE_MARGIN, migrateTags, sourceTagsOf, type TagRun } from '../../src/app/migrate.js';
import type { RetiringStore, SegmentStore, TagInfo } from '../../src/ports/segment-store.js';
import { IdService } from '../../src/service/id-service.js';
import { HostClock } from '../engine/clock.js';
import type { Prng } from '../engine/prng.js';
import { Proc, type Scheduler } from '../engine/scheduler.js';
import { Checker, REFUSALS } from './checker.js';
import { Coverage } from './coverage.js';
import { StateDir } from './state-dir.js';
import { StoreModel } from './store.js';
import { worldResult } from '../phases.js';
import type { WorldResult } from '../worlds.js';

export const MIGRATE_ACTIONS = ['migrate-run', 'migrate-interrupted', 'migrate-rerun', 'peer-load-refused'] as const;
type MigrateAction = (typeof MIGRATE_ACTIONS)[number];

const TAGS = ['a', 'b'];
const LEAF_STEP = 50n;
const END_MS = 25_000;

interface Row {
  maxId: bigint;
  step: number;
}

/** The peer's table: rows moved by Leaf's UPDATE, renamed by migrate's retire, each across the simulated network. */
export class PeerTable {
  readonly rows = new Map<string, Row>();
  retiredAt = new Map<string, number>();
  /** Loads the row took after its retire (none, unless the retire failed to rename it). */
  readonly movedAfterRetire: string[] = [];

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {}

  private net<T>(op: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.sched.after(0.3 + this.rng.float() * 3, undefined, () => {
        let v: T;
        try {
          v = op();
        } catch (e) {
          this.sched.after(0.3 + this.rng.float() * 3, undefined, () => reject(e));
          return;
        }
        this.sched.after(0.3 + this.rng.float() * 3, undefined, () => resolve(v));
      });
    });
  }

  private info(tag: string, r: Row): TagInfo {
    return { tag, maxId: r.maxId, step: r.step, description: '', updatedAt: new Date(0), generation: '1', fenceEpoch: 0 };
  }

  /** Leaf's segment load: the new range is [max_id - step, max_id) after the UPDATE. */
  leafLoad(tag: string): Promise<bigint> {
    return this.net(() => {
      const r = this.rows.get(tag);
      if (!r) throw new TagNotFoundError(tag);
      r.maxId += BigInt(r.step);
      // Judged where the UPDATE commits: an answer arriving after the retire is of a range taken before it.
      if (this.retiredAt.has(tag)) this.movedAfterRetire.push(`${tag} to ${r.maxId}`);
      return r.maxId;
    });
  }

  /** What migrate sees: the rows of the table and its retire. */
  asStore(): SegmentStore & RetiringStore {
    const store: Partial<SegmentStore> & RetiringStore = {
      kind: 'sim-leaf',
      init: async () => {},
      close: async () => {},
      listTags: () => this.net(() => [...this.rows].map(([t, r]) => this.info(t, r))),
      getTag: (tag) => this.net(() => (this.rows.has(tag) ? this.info(tag, this.rows.get(tag) as Row) : undefined)),
      retireTag: (tag, retiredName, check) => this.net(() => this.retire(tag, retiredName, check)),
    };
    return store as SegmentStore & RetiringStore;
  }

  /** The retire's transaction: the row read under its lock, then renamed. */
  retire(tag: string, retiredName: string, check: (locked: TagInfo) => void): TagInfo {
    const r = this.rows.get(tag);
    if (!r) throw new TagNotFoundError(tag);
    const locked = this.info(tag, r);
    check(locked);
    this.rows.delete(tag);
    this.rows.set(retiredName, r);
    this.retiredAt.set(tag, this.sched.now);
    this.sched.log(`OP retire ${tag} at max_id ${r.maxId}`);
    return locked;
  }
}

/** A Leaf server's tag: two segments, the next loaded once the current one is a tenth used (Leaf's rule). */
interface LeafBuffer {
  cur: { next: bigint; end: bigint } | undefined;
  spare: { next: bigint; end: bigint } | undefined;
  loading: boolean;
  failedAt: number;
}

class MigrateWorld {
  readonly checker: Checker;
  readonly coverage = new Coverage<MigrateAction>(MIGRATE_ACTIONS);
  readonly peer: PeerTable;
  readonly target: StoreModel;
  private readonly leafs: Array<{ name: string; tags: Map<string, LeafBuffer> }> = [];
  private readonly seqs: Array<{ name: string; proc: Proc; service: IdService; dir: StateDir; up: boolean }> = [];
  /** Per tag and ID: who answered it (a Leaf server or a Sequoia server). */
  private readonly seen = new Map<string, Map<bigint, string>>();
  private readonly lastOk = new Map<string, number>();
  migratedAt: number | undefined;
  faults = 0;

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {
    this.checker = new Checker(() => sched.now);
    this.peer = new PeerTable(sched, rng.fork());
    this.target = new StoreModel(sched, rng.fork());
    for (const tag of TAGS) this.peer.rows.set(tag, { maxId: BigInt(rng.int(0, 5000)), step: Number(LEAF_STEP) });
    for (let i = 0; i < 2; i++) this.leafs.push({ name: `leaf${i}`, tags: new Map() });
  }

  count(a: MigrateAction): void {
    this.coverage.count(a);
  }

  private record(tag: string, ids: readonly bigint[], who: string): void {
    let byTag = this.seen.get(tag);
    if (!byTag) this.seen.set(tag, (byTag = new Map()));
    for (const id of ids) {
      this.checker.answered++;
      const prev = byTag.get(id);
      if (prev !== undefined) this.checker.fail('duplicate', `${tag} ${id} answered twice: by ${prev}, again by ${who}`);
      else byTag.set(id, who);
    }
  }

  /** One caller's ID from a Leaf server: from its buffers, loading the spare as Leaf does. */
  leafAsk(i: number, tag: string): void {
    const leaf = this.leafs[i] as (typeof this.leafs)[number];
    let b = leaf.tags.get(tag);
    if (!b) leaf.tags.set(tag, (b = { cur: undefined, spare: undefined, loading: false, failedAt: -Infinity }));
    if ((!b.cur || b.cur.next >= b.cur.end) && b.spare) [b.cur, b.spare] = [b.spare, undefined];
    const cur = b.cur;
    const used = cur ? Number(cur.next - (cur.end - LEAF_STEP)) : Number(LEAF_STEP);
    if (!b.spare && !b.loading && used >= Number(LEAF_STEP) / 10 && this.sched.now - b.failedAt > 500) this.leafLoad(leaf.name, tag, b);
    if (!cur || cur.next >= cur.end) return; // Leaf answers an error code: nothing issued
    const id = cur.next++;
    this.record(tag, [id], leaf.name);
  }

  private leafLoad(name: string, tag: string, b: LeafBuffer): void {
    b.loading = true;
    this.peer.leafLoad(tag).then(
      (maxId) => {
        b.loading = false;
        const moved = this.peer.movedAfterRetire.shift();
        if (moved !== undefined) this.checker.fail('retired-row-moved', `${name}: the retired row of ${moved} moved after the retire`);
        b.spare = { next: maxId - LEAF_STEP, end: maxId };
      },
      () => {
        b.loading = false;
        b.failedAt = this.sched.now;
        this.count('peer-load-refused');
        this.sched.log(`err ${name} ${tag} load refused`);
      },
    );
  }

  /** The operator's run of `sequoia migrate` (its store-level steps); answers whether it finished. */
  async migrate(margin: bigint, interrupt: boolean): Promise<boolean> {
    const link = this.target.linkFor(new Proc('migrate'));
    if (interrupt) {
      // The new store goes away mid-run: rows already retired, copies not all written.
      this.sched.after(this.rng.int(0, 8), undefined, () => {
        this.target.faults.unavailable = true;
        this.sched.after(this.rng.int(300, 3000), undefined, () => (this.target.faults.unavailable = false));
      });
    }
    try {
      const source = this.peer.asStore();
      const tags = await sourceTagsOf(source, undefined);
      const run: TagRun = { source, target: link, margin, dryRun: false, keepSource: false, marks: new Map() };
      const steps = await migrateTags(run, tags);
      this.sched.log(
        `OP migrate margin ${margin}: ${steps.map((s) => `${s.tag} ${s.action} at ${s.bound}${s.movedFrom !== undefined ? ` moved from ${s.movedFrom}` : ''}`).join(', ')}`,
      );
      for (const tag of TAGS) await this.target.noteWrite(tag);
      return true;
    } catch (e) {
      this.sched.log(`OP migrate refused: ${e instanceof SequoiaError ? e.code : String(e)}`);
      if (interrupt) this.count('migrate-interrupted');
      return false;
    }
  }

  /** After the copy exists: Sequoia servers on the new store. */
  startSequoia(): void {
    for (let i = 0; i < 2; i++) {
      const name = `seq${i}`;
      const proc = new Proc(name);
      const dir = new StateDir(name, this.sched, this.rng.fork());
      const clock = new HostClock(this.sched, this.rng.int(0, 1e6));
      const service = new IdService({
        store: this.target.linkFor(proc),
        marks: dir.view(proc),
        clock,
        timers: this.sched.timersFor(proc),
        allocator: { maxStep: 40, loadTimeoutMs: 3000, minRetryDelayMs: 100, maxRetryDelayMs: 2000 },
        refreshIntervalMs: 20_000,
      });
      const s = { name, proc, service, dir, up: false };
      this.seqs.push(s);
      service.start().then(
        () => {
          s.up = true;
          this.sched.log(`up ${name}`);
        },
        (e: unknown) => this.checker.fail('liveness', `${name} did not start on the migrated store: ${String(e)}`),
      );
    }
  }

  seqAsk(tag: string): void {
    const ups = this.seqs.filter((s) => s.up);
    if (ups.length === 0) return;
    const s = this.rng.pick(ups);
    const count = this.rng.chance(0.2) ? this.rng.int(2, 20) : 1;
    const settle = (got: Id | Id[]): void => {
      const ids = (Array.isArray(got) ? got : [got]).map(idToBigInt);
      this.sched.log(`ans ${s.name} ${tag} ${ids[0]}+${ids.length}`);
      this.record(tag, ids, s.name);
      this.lastOk.set(`${s.name}/${tag}`, this.sched.now);
    };
    const refuse = (e: unknown): void => {
      const code = e instanceof SequoiaError ? e.code : 'NOT_A_SEQUOIA_ERROR';
      if (!REFUSALS.has(code)) this.checker.fail('unexpected-error', `${s.name} ${tag}: ${code}: ${String(e)}`);
    };
    try {
      const r = count === 1 ? s.service.next(tag) : s.service.nextMany(tag, count);
      if (r instanceof Promise) (r as Promise<Id | Id[]>).then(settle, refuse);
      else settle(r);
    } catch (e) {
      refuse(e);
    }
  }

  checkLiveness(since: number): void {
    if (this.migratedAt === undefined) return this.checker.fail('liveness', 'migrate never finished');
    for (const s of this.seqs)
      for (const tag of TAGS)
        if ((this.lastOk.get(`${s.name}/${tag}`) ?? -1) < since) this.checker.fail('liveness', `${s.name} answered no ${tag} near the end`);
  }
}

export async function runMigrateWorld(sched: Scheduler, root: Prng): Promise<WorldResult> {
  const w = new MigrateWorld(sched, root.fork());
  const r = root.fork();
  // Callers move to Sequoia one by one once the copy exists (the share moved grows); the rest still ask Leaf.
  const arrive = (): void => {
    const tag = r.pick(TAGS);
    const moved = w.migratedAt === undefined ? 0 : Math.min(1, (sched.now - w.migratedAt) / 5000);
    if (r.chance(moved)) w.seqAsk(tag);
    else w.leafAsk(r.int(0, 1), tag);
    if (sched.now < END_MS) sched.after(r.float() * 10, undefined, arrive);
  };
  sched.after(0, undefined, arrive);
  const margin = r.pick([DEFAULT_MIGRATE_MARGIN, 1000n, 0n]);
  const interrupt = r.chance(0.4);
  const runAt = r.int(1000, 6000);
  const operator = async (): Promise<void> => {
    w.count('migrate-run');
    w.faults += interrupt ? 1 : 0;
    let ok = await w.migrate(margin, interrupt);
    while (!ok) {
      await new Promise<void>((resolve) => sched.after(1000, undefined, resolve));
      w.count('migrate-rerun');
      ok = await w.migrate(margin, false);
    }
    w.migratedAt = sched.now;
    w.startSequoia();
    // Run again later, on another host: it must change nothing.
    await new Promise<void>((resolve) => sched.after(r.int(500, 5000), undefined, resolve));
    w.count('migrate-rerun');
    const before = await Promise.all(TAGS.map((t) => w.target.db.getTag(t)));
    await w.migrate(margin, false);
    const after = await Promise.all(TAGS.map((t) => w.target.db.getTag(t)));
    TAGS.forEach((t, i) => {
      if ((after[i]?.fenceEpoch ?? 0) !== (before[i]?.fenceEpoch ?? 0))
        w.checker.fail(
          'migrate-not-idempotent',
          `a second migrate fenced ${t} again (epoch ${before[i]?.fenceEpoch} -> ${after[i]?.fenceEpoch})`,
        );
    });
  };
  sched.at(runAt, undefined, () => void operator());
  const stop = (): boolean => w.checker.findings.length > 0;
  await sched.run(END_MS, () => {}, stop);
  if (!stop()) w.checkLiveness(END_MS - 5000);
  return worldResult('migrate', sched, w, w.faults);
}
