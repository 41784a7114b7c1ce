import { describe, expect, it } from 'vitest';
import { nextStep } from './step-policy.js';

const MIN = 60_000;

describe('nextStep', () => {
  it.each([
    ['first load uses the stored step', undefined, undefined, 1000, 1_000_000, 1000],
    ['segment lasted 1 min: double', 1000, 1 * MIN, 1000, 1_000_000, 2000],
    ['just under 15 min: double', 4000, 15 * MIN - 1, 1000, 1_000_000, 8000],
    ['doubling stops at the cap', 800_000, 1 * MIN, 1000, 1_000_000, 1_000_000],
    ['exactly 15 min: keep', 4000, 15 * MIN, 1000, 1_000_000, 4000],
    ['just under 30 min: keep', 4000, 30 * MIN - 1, 1000, 1_000_000, 4000],
    ['exactly 30 min: halve', 4000, 30 * MIN, 1000, 1_000_000, 2000],
    ['halving never goes below the stored step', 1500, 2 * 60 * MIN, 1000, 1_000_000, 1000],
    ['a raised stored step wins at once', 1000, 20 * MIN, 5000, 1_000_000, 5000],
    ['a stored step above the cap is still the floor', 1000, 1 * MIN, 2_000_000, 1_000_000, 2_000_000],
  ])('%s', (_name, previousStep, lasted, storedStep, maxStep, expected) => {
    const now = 10_000_000;
    expect(
      nextStep({
        previousStep,
        previousLoadAt: lasted === undefined ? undefined : now - lasted,
        now,
        storedStep,
        maxStep,
      }),
    ).toBe(expected);
  });
});
