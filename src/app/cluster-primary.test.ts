import { describe, expect, it } from 'vitest';
import { restartDelayMs, youngDeaths } from './cluster-primary.js';

describe('the restart policy of `serve --workers N`', () => {
  it('replaces a worker after 100 ms, doubling per consecutive young death up to 30 s', () => {
    expect([1, 2, 3, 4, 9, 10, 30].map(restartDelayMs)).toEqual([100, 200, 400, 800, 25_600, 30_000, 30_000]);
  });

  it('counts young deaths until a worker lives past 30 s', () => {
    expect(youngDeaths(0, 500)).toBe(1);
    expect(youngDeaths(4, 30_000)).toBe(5);
    expect(youngDeaths(4, 30_001)).toBe(0);
  });
});
