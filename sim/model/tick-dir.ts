/**
 * A server's state dir as the snowflake side sees it (the `TickRecord` the
 * production TickReservingProvider writes): the highest tick each worker id
 * may have issued, per id space. A write is applied when its simulated fsync
 * completes (in order; sometimes slow) and answered then; a crash drops the
 * writes of the crashed processes that were not yet durable. One TickDir may
 * be given to two servers by mistake (snowflake-world.ts).
 */
import type { TickRecord } from '../../src/adapters/state-dir/tick-reserving-provider.js';
import type { Prng } from '../engine/prng.js';
import type { Proc, Scheduler } from '../engine/scheduler.js';

export class TickDir {
  private readonly ticks = new Map<string, number>();
  private lastFsyncAt = 0;
  private readonly pending = new Map<Proc, Set<{ cancel(): void }>>();

  constructor(
    readonly name: string,
    private readonly sched: Scheduler,
    private readonly rng: Prng,
  ) {}

  /** The processes died: their writes not yet durable are gone. */
  crash(procs: readonly Proc[]): void {
    for (const p of procs) {
      for (const h of this.pending.get(p) ?? []) h.cancel();
      this.pending.delete(p);
    }
  }

  view(proc: Proc): TickRecord {
    const reply = <T>(v: T): Promise<T> =>
      new Promise<T>((resolve) => {
        this.sched.after(this.rng.chance(0.1) ? this.rng.int(1, 30) : 0.05 + this.rng.float() * 0.3, proc, () => resolve(v));
      });
    return {
      lastTick: (space, workerId) => reply(this.ticks.get(`${space}/${workerId}`)),
      highestTick: (space) => {
        let top: number | undefined;
        for (const [k, v] of this.ticks) if (k.startsWith(`${space}/`) && (top === undefined || v > top)) top = v;
        return reply(top);
      },
      recordTick: (space, workerId, tick, exact = false) =>
        new Promise<void>((resolve) => {
          const key = `${space}/${workerId}`;
          const at =
            Math.max(this.lastFsyncAt, this.sched.now) + (this.rng.chance(0.1) ? this.rng.int(20, 400) : 0.5 + this.rng.float() * 4);
          this.lastFsyncAt = at;
          let mine = this.pending.get(proc);
          if (!mine) this.pending.set(proc, (mine = new Set()));
          const set = mine;
          const h = this.sched.at(at, undefined, () => {
            set.delete(h);
            const cur = this.ticks.get(key);
            if (exact || cur === undefined || tick > cur) this.ticks.set(key, tick);
            this.sched.at(this.sched.now, proc, resolve);
          });
          set.add(h);
        }),
      close: async () => {},
    };
  }
}
