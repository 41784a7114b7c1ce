/** The shipped alert rules' promtool unit tests (ops/prometheus/sequoia-alerts.test.yml), with the real promtool. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const candidates = [
  join(
    process.env.SEQUOIA_TOOLS_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sequoia-tools'),
    'prometheus/usr/bin/promtool',
  ),
  '/usr/bin/promtool',
  '/usr/local/bin/promtool',
];
const PROMTOOL = candidates.find((p) => existsSync(p));

const describePromtool = await describeWithService('promtool', async () => {
  if (PROMTOOL === undefined) throw new Error('promtool not found (.ci/observability-tools.sh install)');
});

describePromtool('alert rules (promtool test rules)', () => {
  it('SequoiaBusinessConflict pages on the first report and on any later one', () => {
    const out = execFileSync(PROMTOOL as string, ['test', 'rules', 'sequoia-alerts.test.yml'], {
      cwd: join(ROOT, 'ops/prometheus'),
      encoding: 'utf8',
    });
    expect(out).toContain('SUCCESS');
  });
});
