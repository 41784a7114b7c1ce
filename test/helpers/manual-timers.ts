/** A `Timers` the test drives: nothing fires until the test says so, and every request is recorded. */
import type { Timer, Timers } from '../../src/core/timers.js';

export interface ManualTimer extends Timer {
  readonly kind: 'after' | 'every';
  readonly ms: number;
  readonly fn: () => void;
  readonly cleared: boolean;
  readonly unrefed: boolean;
}

export class ManualTimers implements Timers {
  /** Every timer asked for, in order (cleared ones too). */
  readonly made: ManualTimer[] = [];

  after(ms: number, fn: () => void): Timer {
    return this.make('after', ms, fn);
  }

  every(ms: number, fn: () => void): Timer {
    return this.make('every', ms, fn);
  }

  /** The timers still due to fire (not cleared; one-shots not yet fired). */
  pending(kind?: 'after' | 'every'): ManualTimer[] {
    return this.made.filter((t) => !t.cleared && (kind === undefined || t.kind === kind));
  }

  /** Fires each pending timer that `which` selects, once; one-shots are then done. Answers how many fired. */
  fire(which: (t: ManualTimer) => boolean = () => true): number {
    const due = this.pending().filter(which);
    for (const t of due) {
      if (t.kind === 'after') t.clear();
      t.fn();
    }
    return due.length;
  }

  private make(kind: 'after' | 'every', ms: number, fn: () => void): ManualTimer {
    const t = {
      kind,
      ms,
      fn,
      cleared: false,
      unrefed: false,
      clear() {
        t.cleared = true;
      },
      unref() {
        t.unrefed = true;
        return t;
      },
    };
    this.made.push(t);
    return t;
  }
}
