/**
 * Where the tests find promtool: .ci/observability-tools.sh extracts it from Debian's
 * `prometheus` package into $SEQUOIA_TOOLS_DIR (default ~/.cache/sequoia-tools), unless one is
 * on PATH. Suites that need it use `describePromtool`: skipped loudly without it,
 * failed under SEQUOIA_REQUIRE_SERVICES=1.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describeWithService } from './services.js';

// In the order .ci/observability-tools.sh looks: PATH first, then where it extracts the package.
const candidates = [
  ...(process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d !== '')
    .map((d) => join(d, 'promtool')),
  join(
    process.env.SEQUOIA_TOOLS_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sequoia-tools'),
    'prometheus/usr/bin/promtool',
  ),
];

/** The promtool binary, or undefined when none is installed. */
export const PROMTOOL: string | undefined = candidates.find((p) => existsSync(p));

export const describePromtool = await describeWithService('promtool', async () => {
  if (PROMTOOL === undefined)
    throw new Error(`promtool not found on PATH nor in ${candidates.at(-1)} (.ci/observability-tools.sh install)`);
});
