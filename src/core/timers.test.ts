/**
 * The timer port's system implementation keeps node's semantics (what the
 * production code had before it took a `Timers`), and `delay` leaves nothing
 * behind.
 */
import { describe, expect, it } from 'vitest';
import { delay, systemTimers, type Timer, type Timers } from './timers.js';

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('systemTimers', () => {
  it('after() fires once; clear() before it fires cancels it', async () => {
    const fired: string[] = [];
    await new Promise<void>((done) => systemTimers.after(1, () => done(void fired.push('a'))));
    const cancelled = systemTimers.after(1, () => fired.push('b'));
    cancelled.clear();
    await new Promise<void>((done) => systemTimers.after(5, done));
    expect(fired).toEqual(['a']);
  });

  it('after(0) runs on the next turn, after the I/O already due (setImmediate), not within the current one', async () => {
    const order: string[] = [];
    systemTimers.after(0, () => order.push('timer'));
    await Promise.resolve();
    order.push('microtask');
    await nextTurn();
    expect(order).toEqual(['microtask', 'timer']);
    const t = systemTimers.after(0, () => order.push('cleared'));
    t.clear();
    await nextTurn();
    await nextTurn();
    expect(order).toEqual(['microtask', 'timer']);
  });

  it('every() repeats until cleared; unref() answers the timer itself', async () => {
    let n = 0;
    let t: Timer | undefined;
    await new Promise<void>((done) => {
      t = systemTimers.every(1, () => {
        if (++n === 3) done();
      });
    });
    expect(t!.unref()).toBe(t);
    t!.clear();
    const seen = n;
    await new Promise<void>((done) => systemTimers.after(10, done));
    expect(n).toBe(seen);
  });
});

describe('delay', () => {
  /** A Timers that records what it is asked and fires only when told. */
  function manual() {
    const pending = new Map<number, () => void>();
    let nextId = 0;
    const timers: Timers = {
      after: (_ms, fn) => {
        const id = nextId++;
        pending.set(id, fn);
        const t: Timer = { clear: () => void pending.delete(id), unref: () => t };
        return t;
      },
      every: () => {
        throw new Error('not used');
      },
    };
    return { timers, pending };
  }

  it('resolves when the port fires its timer', async () => {
    const { timers, pending } = manual();
    let done = false;
    const p = delay(timers, 1000).then(() => (done = true));
    await nextTurn();
    expect(done).toBe(false);
    for (const fn of pending.values()) fn();
    await p;
    expect(done).toBe(true);
    expect(pending.size).toBe(0);
  });

  it('resolves at once when the signal aborts, and clears its timer', async () => {
    const { timers, pending } = manual();
    const ac = new AbortController();
    const p = delay(timers, 1000, ac.signal);
    expect(pending.size).toBe(1);
    ac.abort();
    await p;
    expect(pending.size).toBe(0);
    await delay(timers, 1000, ac.signal); // already aborted: no timer at all
    expect(pending.size).toBe(0);
  });
});
