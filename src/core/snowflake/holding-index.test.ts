import { describe, expect, it } from 'vitest';
import { HoldingIndex } from './holding-index.js';

describe('HoldingIndex', () => {
  it('answers held inside any holding of the worker id, and not between, before, after or for another id', () => {
    const ix = new HoldingIndex([
      { workerId: 3, fromTick: 100, untilTick: 200 },
      { workerId: 3, fromTick: 150, untilTick: 250 },
      { workerId: 3, fromTick: 251, untilTick: 260 },
      { workerId: 3, fromTick: 400, untilTick: 500 },
      { workerId: 5, fromTick: 0, untilTick: 10 },
      // A grant not yet renewed covers nothing.
      { workerId: 7, fromTick: 20, untilTick: 19 },
    ]);
    for (const t of [100, 200, 250, 255, 260, 400, 450, 500]) expect(ix.held(3, t)).toBe(true);
    for (const t of [99, 261, 300, 399, 501]) expect(ix.held(3, t)).toBe(false);
    expect(ix.held(5, 10)).toBe(true);
    expect(ix.held(5, 11)).toBe(false);
    expect(ix.held(4, 150)).toBe(false);
    expect(ix.held(7, 20)).toBe(false);
    expect(ix.held(7, 19)).toBe(false);
  });
});
