/**
 * `npm run lint` lints what the project owns: a file git does not track (a
 * newcomer's scratch file in the checkout) is ignored, a tracked one is not.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

describe('eslint scope', () => {
  it('ignores untracked scratch files and lints tracked ones', async () => {
    const scratch = join(ROOT, `scratch-lint-${process.pid}.ts`);
    writeFileSync(scratch, 'const x: any = 1;\n');
    try {
      const eslint = new ESLint({ cwd: ROOT });
      // Outside a git checkout (a copy such as .ci/node24.sh makes) git cannot
      // tell tracked from untracked, and eslint.config.js ignores nothing extra.
      const inGit = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim() === 'true';
      expect(await eslint.isPathIgnored(scratch)).toBe(inGit);
      expect(await eslint.isPathIgnored(join(ROOT, 'src', 'index.ts'))).toBe(false);
      expect(await eslint.isPathIgnored(join(ROOT, 'test', 'package', 'lint-scope.test.ts'))).toBe(false);
    } finally {
      rmSync(scratch, { force: true });
    }
  });
});
