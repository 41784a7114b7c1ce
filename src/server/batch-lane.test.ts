import { describe, expect, it } from 'vitest';
import { BatchLane, LANE_MIN_COUNT } from './batch-lane.js';

const turnOfLoop = () => new Promise((r) => setImmediate(r));

describe('BatchLane: batches take turns, at most idsPerTurn IDs of them per turn of the event loop', () => {
  it('only batches take a turn', () => {
    expect(BatchLane.takesTurn(1)).toBe(false);
    expect(BatchLane.takesTurn(LANE_MIN_COUNT)).toBe(false);
    expect(BatchLane.takesTurn(LANE_MIN_COUNT + 1)).toBe(true);
  });

  it('runs nothing in the turn that queued it; then one budget per turn, in order', async () => {
    const lane = new BatchLane({ idsPerTurn: 10_000 });
    const ran: number[] = [];
    const done = [1, 2, 3, 4, 5].map((i) => lane.turn(i === 2 ? 4000 : i === 3 ? 6000 : 10_000).then(() => ran.push(i)));
    expect(lane.queued).toBe(5);
    await Promise.resolve();
    expect(ran).toEqual([]);
    await turnOfLoop();
    expect(ran).toEqual([1]); // 10,000: the budget
    await turnOfLoop();
    expect(ran).toEqual([1, 2, 3]); // 4,000 + 6,000
    await turnOfLoop();
    expect(ran).toEqual([1, 2, 3, 4]);
    await Promise.all(done);
    expect(ran).toEqual([1, 2, 3, 4, 5]);
    expect(lane.queued).toBe(0);
  });

  it('a batch above the budget still runs, alone in its turn', async () => {
    const lane = new BatchLane({ idsPerTurn: 100 });
    const ran: string[] = [];
    const a = lane.turn(5000).then(() => ran.push('big'));
    const b = lane.turn(50).then(() => ran.push('small'));
    await turnOfLoop();
    expect(ran).toEqual(['big']);
    await Promise.all([a, b]);
    expect(ran).toEqual(['big', 'small']);
  });

  it('work that arrives between two turns runs before the queued batches go on (what a single ID request gets)', async () => {
    const lane = new BatchLane();
    const ran: string[] = [];
    const batches = Array.from({ length: 20 }, (_, i) => lane.turn(10_000).then(() => ran.push(`batch ${i}`)));
    await turnOfLoop();
    ran.push('single'); // as a request read from its socket between two turns
    await Promise.all(batches);
    expect(ran.indexOf('single')).toBeLessThanOrEqual(1);
  });
});
