import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'torture/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration suites share real databases and spawn servers; two cores do not
    // take many of them at once.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
