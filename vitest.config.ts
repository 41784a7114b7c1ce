import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  // examples/ import the package by name, as their users do (after their own
  // `npm install`); the project's tests run them against this checkout's src/.
  resolve: {
    alias: [
      { find: /^sequoia-id\/client$/, replacement: src('client/index.ts') },
      { find: /^sequoia-id\/server$/, replacement: src('app/index.ts') },
      { find: /^sequoia-id$/, replacement: src('index.ts') },
    ],
  },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'torture/**/*.test.ts', 'sim/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration suites share real databases and spawn servers; two cores do not
    // take many of them at once.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
