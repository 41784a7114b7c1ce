/**
 * One seeded scheduler for the whole simulated cluster: a queue of events in
 * simulated time (timer firings, store answers, request arrivals, faults),
 * taken one at a time. After each event the microtasks it started run to the
 * end before the next event (see `drain`), so JavaScript's own ordering is
 * kept and nothing depends on real time. Events at the same instant are
 * ordered by a key drawn from the seed.
 */
import type { Timer, Timers } from '../../src/core/timers.js';
import type { Prng } from './prng.js';

interface Event {
  readonly time: number;
  readonly key: number;
  readonly seq: number;
  readonly fn: () => void;
  readonly proc: Proc | undefined;
  cancelled: boolean;
}

/**
 * A simulated process: its events are dropped once it dies (a crash loses
 * its timers and the answers on their way to it) and held while it is
 * paused (SIGSTOP: they run after it resumes).
 */
export class Proc {
  alive = true;
  paused = false;
  readonly held: Array<() => void> = [];
  constructor(readonly name: string) {}
}

export class Scheduler {
  /** Simulated true time, ms from the start of the run. */
  now = 0;
  events = 0;
  private readonly heap: Event[] = [];
  private seq = 0;
  readonly trace: string[] = [];

  constructor(private readonly rng: Prng) {}

  at(time: number, proc: Proc | undefined, fn: () => void): { cancel(): void } {
    const ev: Event = { time: Math.max(time, this.now), key: this.rng.u32(), seq: this.seq++, fn, proc, cancelled: false };
    push(this.heap, ev);
    return {
      cancel: () => {
        ev.cancelled = true;
      },
    };
  }

  after(ms: number, proc: Proc | undefined, fn: () => void): { cancel(): void } {
    return this.at(this.now + ms, proc, fn);
  }

  log(line: string): void {
    this.trace.push(`${this.now.toFixed(0).padStart(7)} ${line}`);
  }

  /** Resumes a paused process: what it missed runs now, in the order it arrived. */
  resume(proc: Proc): void {
    proc.paused = false;
    const held = proc.held.splice(0);
    for (const fn of held) this.at(this.now, proc, fn);
  }

  /** Timers of one process on simulated time. */
  timersFor(proc: Proc): Timers {
    const after = (ms: number, fn: () => void): Timer => {
      const h = this.after(Math.max(0, ms), proc, fn);
      const t: Timer = { clear: () => h.cancel(), unref: () => t };
      return t;
    };
    const every = (ms: number, fn: () => void): Timer => {
      let h: { cancel(): void } | undefined;
      let stopped = false;
      const arm = (): void => {
        h = this.after(Math.max(1, ms), proc, () => {
          if (stopped) return;
          arm();
          fn();
        });
      };
      arm();
      const t: Timer = {
        clear: () => {
          stopped = true;
          h?.cancel();
        },
        unref: () => t,
      };
      return t;
    };
    return { after, every };
  }

  /**
   * Runs events up to `until` (simulated ms). `afterEach` runs once the
   * event's microtasks are done (the checks). Resolves early when `stop()` says so.
   */
  async run(until: number, afterEach: () => void, stop: () => boolean): Promise<void> {
    while (this.heap.length > 0 && !stop()) {
      const ev = pop(this.heap) as Event;
      if (ev.cancelled) continue;
      if (ev.time > until) {
        push(this.heap, ev);
        break;
      }
      this.now = ev.time;
      const p = ev.proc;
      if (p && !p.alive) continue;
      if (p?.paused) {
        p.held.push(ev.fn);
        continue;
      }
      this.events++;
      ev.fn();
      await drain();
      afterEach();
    }
    if (!stop() && this.now < until) this.now = until;
  }
}

/**
 * Lets every microtask started by the last event run: a macrotask turn comes
 * only after the microtask queue is empty, however deep its chains are.
 * Nothing else runs in that turn (production code under simulation has no
 * real timers or I/O), so the order stays a function of the seed.
 */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function less(a: Event, b: Event): boolean {
  if (a.time !== b.time) return a.time < b.time;
  if (a.key !== b.key) return a.key < b.key;
  return a.seq < b.seq;
}

function push(h: Event[], e: Event): void {
  h.push(e);
  let i = h.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!less(h[i] as Event, h[parent] as Event)) break;
    [h[i], h[parent]] = [h[parent] as Event, h[i] as Event];
    i = parent;
  }
}

function pop(h: Event[]): Event | undefined {
  const top = h[0];
  const last = h.pop();
  if (h.length > 0 && last) {
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && less(h[l] as Event, h[m] as Event)) m = l;
      if (r < h.length && less(h[r] as Event, h[m] as Event)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m] as Event, h[i] as Event];
      i = m;
    }
  }
  return top;
}
