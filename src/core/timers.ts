/**
 * Timers, injected like the clock and randomness: production code schedules
 * work only through a `Timers`, so a simulated scheduler can decide when (and
 * in which order) every timer fires, and replay it from a seed. This file is
 * the one home of node's setTimeout/setInterval/setImmediate (see the lint
 * rule in eslint.config.js and docs/architecture.md).
 */

export interface Timer {
  /** Cancels it; harmless when it already fired or was cleared. */
  clear(): void;
  /** Lets the process exit while only this timer is pending (node's `unref`). Returns the timer. */
  unref(): Timer;
}

export interface Timers {
  /**
   * Calls `fn` once, `ms` milliseconds from now. `ms <= 0` means the next turn
   * of the event loop, after the I/O already due: what "once the current turn
   * ends" callers want (the strict allocator gathers a turn's requests so).
   */
  after(ms: number, fn: () => void): Timer;
  /** Calls `fn` every `ms` milliseconds until cleared. */
  every(ms: number, fn: () => void): Timer;
}

class SystemTimer implements Timer {
  constructor(
    private readonly handle: NodeJS.Timeout | NodeJS.Immediate,
    private readonly immediate: boolean,
  ) {}

  clear(): void {
    if (this.immediate) clearImmediate(this.handle as NodeJS.Immediate);
    else clearTimeout(this.handle as NodeJS.Timeout); // clears an interval too
  }

  unref(): Timer {
    this.handle.unref();
    return this;
  }
}

/**
 * Node's timers. The globals are read at each call, not captured at import,
 * so a test's fake timers still apply. `after(0)` is setImmediate: a
 * setTimeout of 0 waits at least 1 ms and runs before the turn's I/O.
 */
export const systemTimers: Timers = {
  after: (ms, fn) => (ms <= 0 ? new SystemTimer(setImmediate(fn), true) : new SystemTimer(setTimeout(fn, ms), false)),
  every: (ms, fn) => new SystemTimer(setInterval(fn, ms), false),
};

/** A promise sleep on `timers`: resolves after `ms`, or at once (resolving, not rejecting) when `signal` aborts; leaves no timer behind. */
export function delay(timers: Timers, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      t.clear();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = timers.after(ms, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}
