/**
 * The ports rule of eslint.config.js (docs/architecture.md, "Time, timers
 * and randomness are ports") must fail on a planted direct use of node's
 * clock, timers or CSPRNG in a folder the simulator drives, and pass the
 * one home of each system implementation. Each case lints a planted file as
 * if it stood at that path, with the project's own configuration.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const eslint = new ESLint({ cwd: ROOT });
const RULES = new Set(['no-restricted-globals', 'no-restricted-properties', 'no-restricted-syntax', 'no-restricted-imports']);

async function portErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return (result?.messages ?? []).filter((m) => m.ruleId !== null && RULES.has(m.ruleId)).map((m) => m.message);
}

const PLANTED: Array<[string, string]> = [
  ['src/core/snowflake/planted.ts', 'export const t = Date.now();\n'],
  ['src/core/planted.ts', 'export const t = performance.now();\n'],
  ['src/service/planted.ts', 'export const r = Math.random();\n'],
  ['src/service/planted.ts', 'export const d = new Date();\n'],
  ['src/service/planted.ts', 'setTimeout(() => {}, 10);\n'],
  ['src/client/planted.ts', 'export const h = setInterval(() => {}, 10);\n'],
  ['src/client/planted.ts', 'setImmediate(() => {});\n'],
  ['src/client/planted.ts', 'globalThis.setTimeout(() => {}, 1);\n'],
  ['src/adapters/state-dir/planted.ts', "import { setTimeout as sleep } from 'node:timers/promises';\nexport const s = sleep;\n"],
  ['src/adapters/lease/planted.ts', "import { randomUUID } from 'node:crypto';\nexport const u = randomUUID();\n"],
  ['src/adapters/lease/planted.ts', 'export const u = crypto.randomUUID();\n'],
  ['src/adapters/multi/planted.ts', "import { randomBytes } from 'crypto';\nexport const b = randomBytes(4);\n"],
  [
    'src/core/planted.ts',
    "import { createRequire } from 'node:module';\nexport const b = createRequire(import.meta.url)('node:crypto').randomBytes(4);\n",
  ],
];

describe('the ports rule', () => {
  it.each(PLANTED)('%s: refuses %j', async (path, code) => {
    const errors = await portErrors(path, code);
    expect(errors.join('\n')).toMatch(/injected port|reads the clock/);
  });

  it.each([
    ['src/service/planted.ts', "import { systemClock } from '../core/clock.js';\nexport const d = new Date(systemClock.now());\n"],
    ['src/adapters/lease/planted.ts', "import { createHmac } from 'node:crypto';\nexport const h = createHmac;\n"],
    // Outside the folders the simulator drives (the server's edge, a store adapter), the globals stay allowed.
    ['src/server/planted.ts', 'export const t = Date.now();\n'],
    ['src/adapters/postgres/planted.ts', 'setTimeout(() => {}, 1);\n'],
  ])('%s: passes %j', async (path, code) => {
    expect(await portErrors(path, code)).toEqual([]);
  });

  it.each(['src/core/clock.ts', 'src/core/timers.ts', 'src/core/random.ts'])(
    'the home %s passes, and reads what the rule refuses elsewhere',
    async (home) => {
      const code = readFileSync(join(ROOT, home), 'utf8');
      expect(await portErrors(home, code)).toEqual([]);
      // The same text anywhere else is refused: the exception is the path, not the code.
      expect((await portErrors('src/service/planted.ts', code)).length).toBeGreaterThan(0);
    },
  );
});
