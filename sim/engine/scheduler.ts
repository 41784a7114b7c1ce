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

/** One scheduled event; also its own cancel handle (no closure per event). */
class Event {
  cancelled = false;
  constructor(
    readonly time: number,
    readonly key: number,
    readonly seq: number,
    readonly fn: () => void,
    readonly proc: Proc | undefined,
  ) {}

  cancel(): void {
    this.cancelled = true;
  }
}

/** Events run per batch of immediates (see `run`): large enough that the batch's own cost vanishes. */
const BATCH = 512;

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
    const ev = new Event(Math.max(time, this.now), this.rng.u32(), this.seq++, fn, proc);
    push(this.heap, ev);
    return ev;
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
   *
   * Each event runs in its own immediate: Node drains the microtask queue
   * between two immediates of one batch, however deep its chains are, so an
   * event's promises settle before the next event is chosen. Nothing else
   * runs meanwhile (production code under simulation has no real timers or
   * I/O), so the order stays a function of the seed. A batch of immediates
   * per event loop turn, rather than one await of a fresh immediate per
   * event, saves a loop turn and two promises per event.
   */
  run(until: number, afterEach: () => void, stop: () => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let done = false;
      let ran = false;
      const finish = (): void => {
        done = true;
        if (!stop() && this.now < until) this.now = until;
        resolve();
      };
      const step = (): void => {
        if (done) return;
        try {
          if (ran) afterEach();
          ran = this.runNext(until, stop);
          if (!ran) finish();
        } catch (e) {
          done = true;
          reject(e as Error);
        }
      };
      const batch = (): void => {
        if (done) return;
        for (let i = 0; i < BATCH; i++) setImmediate(step);
        setImmediate(batch);
      };
      batch();
    });
  }

  /** Runs the next live event due by `until`; false when there is none (or `stop()`). */
  private runNext(until: number, stop: () => boolean): boolean {
    const heap = this.heap;
    while (heap.length > 0 && !stop()) {
      const ev = pop(heap) as Event;
      if (ev.cancelled) continue;
      if (ev.time > until) {
        push(heap, ev);
        return false;
      }
      this.now = ev.time;
      const p = ev.proc;
      if (p !== undefined) {
        if (!p.alive) continue;
        if (p.paused) {
          p.held.push(ev.fn);
          continue;
        }
      }
      this.events++;
      ev.fn();
      return true;
    }
    return false;
  }
}

function less(a: Event, b: Event): boolean {
  if (a.time !== b.time) return a.time < b.time;
  if (a.key !== b.key) return a.key < b.key;
  return a.seq < b.seq;
}

function push(h: Event[], e: Event): void {
  let i = h.length;
  h.push(e);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const p = h[parent] as Event;
    if (!less(e, p)) break;
    h[i] = p;
    i = parent;
  }
  h[i] = e;
}

function pop(h: Event[]): Event | undefined {
  const top = h[0];
  const last = h.pop();
  const n = h.length;
  if (n > 0 && last) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let m = l;
      let c = h[l] as Event;
      if (r < n && less(h[r] as Event, c)) {
        m = r;
        c = h[r] as Event;
      }
      if (!less(c, last)) break;
      h[i] = c;
      i = m;
    }
    h[i] = last;
  }
  return top;
}
