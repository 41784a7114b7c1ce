/**
 * A server's state dir as the HighWaterMarkStore port sees it: marks a
 * process reads and writes at once (one transaction), made durable by a
 * simulated fsync some time later, in order. A crash keeps exactly what was
 * durable. `update` resolves when its record is durable, as the port
 * promises, unless the `missing-fsync` plant is on.
 */
import type { HighWaterMark } from '../../src/core/segment/rollback-guard.js';
import type { HighWaterMarkStore } from '../../src/ports/high-water-mark-store.js';
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';

export class StateDir {
  readonly durable = new Map<string, HighWaterMark>();
  private visible = new Map<string, HighWaterMark>();
  private lastFsyncAt = 0;
  private readonly pending = new Set<{ cancel(): void }>();
  /** Plant `missing-fsync`: a write is answered before it is durable. */
  answerBeforeDurable = false;

  constructor(
    readonly name: string,
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {}

  /** The machine went down: what was not durable is gone. */
  crash(): void {
    for (const p of this.pending) p.cancel();
    this.pending.clear();
    this.visible = new Map(this.durable);
  }

  /** The disk is gone (a machine re-provisioned): the server starts with no marks. */
  lose(): void {
    this.crash();
    this.durable.clear();
    this.visible.clear();
    this.lost++;
  }

  /** How many times the state dir was lost: a server without its marks cannot know what it handed out before. */
  lost = 0;

  view(proc: Proc): HighWaterMarkStore {
    const reply = <T>(v: T, ms: number): Promise<T> =>
      new Promise<T>((resolve) => {
        this.sched.after(ms, proc, () => resolve(v));
      });
    const write = (tag: string, next: HighWaterMark): Promise<void> => {
      this.visible.set(tag, next);
      const at = Math.max(this.lastFsyncAt, this.sched.now) + (this.rng.chance(0.1) ? this.rng.int(20, 400) : 0.5 + this.rng.float() * 4);
      this.lastFsyncAt = at;
      let durable: () => void = () => {};
      const h = this.sched.at(at, undefined, () => {
        this.pending.delete(h);
        this.durable.set(tag, next);
        durable();
      });
      this.pending.add(h);
      if (this.answerBeforeDurable) return reply(undefined, 0.05);
      return new Promise<void>((resolve) => {
        durable = () => this.sched.at(this.sched.now, proc, resolve);
      });
    };
    return {
      where: `state dir ${this.name}`,
      // Read off the event loop (a worker thread): usually fast, sometimes behind a busy disk.
      get: (tag) => reply(this.visible.get(tag), this.rng.chance(0.1) ? this.rng.int(1, 30) : 0.05 + this.rng.float() * 0.3),
      put: (tag, record) => write(tag, record),
      update: async (tag, change) => {
        const current = this.visible.get(tag);
        const next = change(current);
        if (next === undefined || next === current) return reply(current, 0.05);
        await write(tag, next);
        return next;
      },
    };
  }
}
